import { isRecord } from '@meshrelay/api';

type Json = Record<string, unknown>;

/** An Istio StringMatch as an xDS header matcher's fields (the legacy fields every gRPC version reads). */
function headerMatcher(name: string, match: Json, invert: boolean): Json | undefined {
  const base: Json = { name, ...(invert ? { invert_match: true } : {}) };
  if (typeof match['exact'] === 'string') return { ...base, exact_match: match['exact'] };
  if (typeof match['prefix'] === 'string') return { ...base, prefix_match: match['prefix'] };
  if (typeof match['regex'] === 'string') return { ...base, safe_regex_match: { regex: match['regex'] } };
  // An empty StringMatch means "present" in Istio.
  if (Object.keys(match).length === 0) return { ...base, present_match: true };
  return undefined;
}

/**
 * One Istio HTTPMatchRequest as an xDS RouteMatch. Unsupported parts (query parameters,
 * methods, ports, source labels) come back in `unsupported` with their field names.
 */
export function routeMatch(m: Json): { match: Json; unsupported: string[] } {
  const match: Json = {};
  const unsupported: string[] = [];
  const uri = isRecord(m['uri']) ? m['uri'] : undefined;
  if (uri && typeof uri['exact'] === 'string') match['path'] = uri['exact'];
  else if (uri && typeof uri['prefix'] === 'string') match['prefix'] = uri['prefix'];
  else if (uri && typeof uri['regex'] === 'string') match['safe_regex'] = { regex: uri['regex'] };
  else match['prefix'] = '/';
  if (m['ignoreUriCase'] === true) match['case_sensitive'] = false;
  const headers: Json[] = [];
  for (const [key, invert] of [
    ['headers', false],
    ['withoutHeaders', true],
  ] as const) {
    const hs = isRecord(m[key]) ? m[key] : {};
    for (const name of Object.keys(hs).sort()) {
      const value = hs[name];
      const h = isRecord(value) ? headerMatcher(name, value, invert) : undefined;
      if (h) headers.push(h);
      else unsupported.push(`${key}.${name}`);
    }
  }
  if (isRecord(m['authority'])) {
    const h = headerMatcher(':authority', m['authority'], false);
    if (h) headers.push(h);
  }
  if (isRecord(m['method'])) {
    // gRPC calls are all POST; a method match on POST holds, any other never does.
    const h = headerMatcher(':method', m['method'], false);
    if (h) headers.push(h);
  }
  if (headers.length > 0) match['headers'] = headers;
  for (const field of ['queryParams', 'port', 'sourceLabels', 'sourceNamespace', 'gateways', 'scheme', 'statPrefix']) {
    if (m[field] !== undefined && !(Array.isArray(m[field]) && m[field].length === 0)) unsupported.push(field);
  }
  return { match, unsupported };
}
