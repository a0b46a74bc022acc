import { isRecord, type Resource } from '@meshrelay/api';
import { effectivePolicy, type HostRule } from './destination-rules.ts';
import { parseDuration } from './duration.ts';
import type { FindingList } from './findings.ts';
import { FAULT_FILTER, FAULT_TYPE, clusterName, hostMatches, listenerName, resolveHost } from './names.ts';
import { routeMatch } from './route-match.ts';
import type { ServiceHost } from './types.ts';

type Json = Record<string, unknown>;

/** What routes read besides the VirtualService: the hosts and rules known to the cluster. */
export interface RouteContext {
  readonly hosts: ReadonlyMap<string, ServiceHost>;
  readonly rules: ReadonlyMap<string, HostRule>;
  readonly clusterDomain: string;
  readonly findings: FindingList;
}

/** gRPC status names a client retries on; other Istio retryOn values (HTTP conditions) do not apply to gRPC. */
const GRPC_RETRY_ON = new Set(['cancelled', 'deadline-exceeded', 'internal', 'resource-exhausted', 'unavailable']);
/** Istio's default retryOn, which its proxies retry on when a VirtualService gives attempts but no conditions. */
const ISTIO_DEFAULT_RETRY_ON = 'connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes';
/** HTTP route fields gRPC clients ignore or reject, reported when set. */
const IGNORED_HTTP_FIELDS = [
  'rewrite',
  'mirror',
  'mirrors',
  'mirrorPercentage',
  'mirror_percent',
  'headers',
  'corsPolicy',
];

function destinationCluster(dest: Json, vs: Resource, port: number, ctx: RouteContext): string | undefined {
  if (typeof dest['host'] !== 'string') return undefined;
  const host = resolveHost(dest['host'], vs.metadata.namespace ?? 'default', ctx.clusterDomain);
  const known = ctx.hosts.get(host);
  const explicit =
    isRecord(dest['port']) && typeof dest['port']['number'] === 'number' ? dest['port']['number'] : undefined;
  // istiod: no port given → the only port of the destination, else the port the request came in on.
  const p = explicit ?? (known?.ports.length === 1 ? known.ports[0]?.number : undefined) ?? port;
  return clusterName(host, p, typeof dest['subset'] === 'string' ? dest['subset'] : '');
}

function retryPolicy(http: Json, where: string, vs: Resource, ctx: RouteContext): Json | undefined {
  const retries = isRecord(http['retries']) ? http['retries'] : undefined;
  if (retries === undefined || typeof retries['attempts'] !== 'number' || retries['attempts'] <= 0) return undefined;
  const asked = typeof retries['retryOn'] === 'string' ? retries['retryOn'] : ISTIO_DEFAULT_RETRY_ON;
  const kept = asked
    .split(',')
    .map((s) => s.trim())
    .filter((s) => GRPC_RETRY_ON.has(s));
  const dropped = asked
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '' && !GRPC_RETRY_ON.has(s));
  if (dropped.length > 0 && typeof retries['retryOn'] === 'string') {
    ctx.findings.add(
      vs,
      `${where}.retries.retryOn`,
      `gRPC clients retry on gRPC status codes only; ${dropped.join(',')} left out`,
    );
  }
  if (kept.length === 0) return undefined;
  const policy: Json = { retry_on: kept.join(','), num_retries: { value: retries['attempts'] } };
  const perTry = parseDuration(retries['perTryTimeout']);
  if (perTry) policy['per_try_timeout'] = perTry;
  return policy;
}

/** Istio's percentage (a double, 0–100) as a FractionalPercent per million. */
function perMillion(pct: unknown): Json {
  const value = isRecord(pct) && typeof pct['value'] === 'number' ? pct['value'] : 100;
  return { numerator: Math.round(value * 10000), denominator: 'MILLION' };
}

function faultConfig(http: Json): Json | undefined {
  const fault = isRecord(http['fault']) ? http['fault'] : undefined;
  if (fault === undefined) return undefined;
  const out: Json = { '@type': FAULT_TYPE };
  const abort = isRecord(fault['abort']) ? fault['abort'] : undefined;
  if (abort && typeof abort['httpStatus'] === 'number')
    out['abort'] = { http_status: abort['httpStatus'], percentage: perMillion(abort['percentage']) };
  else if (abort && typeof abort['grpcStatus'] === 'string')
    out['abort'] = { grpc_status: grpcCode(abort['grpcStatus']), percentage: perMillion(abort['percentage']) };
  const delay = isRecord(fault['delay']) ? fault['delay'] : undefined;
  const fixed = delay ? parseDuration(delay['fixedDelay']) : undefined;
  if (delay && fixed)
    out['delay'] = {
      fixed_delay: fixed,
      percentage: perMillion(
        delay['percentage'] ?? (typeof delay['percent'] === 'number' ? { value: delay['percent'] } : undefined),
      ),
    };
  return out['abort'] || out['delay'] ? out : undefined;
}

const GRPC_CODES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];
function grpcCode(name: string): number {
  const i = GRPC_CODES.indexOf(name.toUpperCase());
  return i >= 0 ? i : Number.isInteger(Number(name)) ? Number(name) : 2;
}

/** The ring-hash key of a destination, from its DestinationRule's consistentHash (header keys only reach gRPC). */
function hashPolicy(cluster: string, where: string, ctx: RouteContext): Json[] {
  const [, port, subsetName, host] = cluster.split('|');
  const rule = ctx.rules.get(host ?? '');
  const policy = effectivePolicy(
    rule,
    Number(port),
    rule?.subsets.find((s) => s.name === subsetName),
  );
  const lb = isRecord(policy['loadBalancer']) ? policy['loadBalancer'] : undefined;
  const hash = lb && isRecord(lb['consistentHash']) ? lb['consistentHash'] : undefined;
  if (hash === undefined) return [];
  if (typeof hash['httpHeaderName'] === 'string') return [{ header: { header_name: hash['httpHeaderName'] } }];
  if (hash['useSourceIp'] === true) return [{ filter_state: { key: 'io.grpc.channel_id' } }];
  if (rule)
    ctx.findings.add(
      rule.resource,
      'loadBalancer.consistentHash',
      `gRPC clients hash on a header or their channel only; calls of ${where} in the VirtualService pick at random`,
    );
  return [];
}

/** The RouteAction of one Istio HTTPRoute; undefined (reported) when it has no destination gRPC can take. */
function routeAction(http: Json, where: string, vs: Resource, port: number, ctx: RouteContext): Json | undefined {
  const dests = (Array.isArray(http['route']) ? http['route'].filter(isRecord) : []).flatMap((d) => {
    const cluster = isRecord(d['destination']) ? destinationCluster(d['destination'], vs, port, ctx) : undefined;
    return cluster ? [{ cluster, weight: typeof d['weight'] === 'number' ? d['weight'] : 0 }] : [];
  });
  // istiod: one destination takes all the traffic; among several, one of weight 0 takes none.
  const live = dests.length === 1 ? dests : dests.filter((d) => d.weight > 0);
  if (live.length === 0) return undefined;
  const action: Json =
    live.length === 1
      ? { cluster: live[0]?.cluster }
      : { weighted_clusters: { clusters: live.map((d) => ({ name: d.cluster, weight: { value: d.weight } })) } };
  const timeout = parseDuration(http['timeout']);
  if (timeout) action['max_stream_duration'] = { max_stream_duration: timeout };
  const retry = retryPolicy(http, where, vs, ctx);
  if (retry) action['retry_policy'] = retry;
  // A ring hash needs the key on the route; with a split the pick is already random.
  const hashing = live.length === 1 && live[0] ? hashPolicy(live[0].cluster, where, ctx) : [];
  if (hashing.length > 0) action['hash_policy'] = hashing;
  return action;
}

/** Routes of one VirtualService HTTPRoute: one per match alternative (istiod does the same). */
function httpRoutes(http: Json, index: number, vs: Resource, port: number, ctx: RouteContext): Json[] {
  const where = `spec.http[${index}]`;
  for (const field of IGNORED_HTTP_FIELDS)
    if (http[field] !== undefined)
      ctx.findings.add(vs, `${where}.${field}`, `gRPC clients do not apply ${field}; left out`);
  if (http['redirect'] !== undefined || http['directResponse'] !== undefined) {
    const field = http['redirect'] !== undefined ? 'redirect' : 'directResponse';
    ctx.findings.add(vs, `${where}.${field}`, `gRPC clients cannot follow ${field}; the route is left out`);
    return [];
  }
  const action = routeAction(http, where, vs, port, ctx);
  if (action === undefined) return [];
  const fault = faultConfig(http);
  const matches = Array.isArray(http['match']) && http['match'].length > 0 ? http['match'].filter(isRecord) : [{}];
  const out: Json[] = [];
  matches.forEach((m, i) => {
    if (typeof m['port'] === 'number' && m['port'] !== port) return;
    const { match, unsupported } = routeMatch({ ...m, port: undefined });
    if (unsupported.length > 0) {
      // Dropping a condition would widen the match; the alternative is left out instead.
      ctx.findings.add(
        vs,
        `${where}.match[${i}]`,
        `gRPC clients cannot match on ${unsupported.join(', ')}; this match is left out`,
      );
      return;
    }
    const name =
      typeof http['name'] === 'string' ? http['name'] : `${vs.metadata.namespace ?? ''}/${vs.metadata.name}.${index}`;
    out.push({ name, match, route: action, ...(fault ? { typed_per_filter_config: { [FAULT_FILTER]: fault } } : {}) });
  });
  return out;
}

/** VirtualServices (mesh-bound) whose hosts cover `host`, in namespace/name order. */
export function virtualServicesFor(host: string, output: readonly Resource[], clusterDomain: string): Resource[] {
  return output
    .filter((r) => r.kind === 'VirtualService' && r.apiVersion.startsWith('networking.istio.io/') && isRecord(r.spec))
    .filter((r) => {
      const spec = r.spec as Json;
      const gateways = Array.isArray(spec['gateways']) ? spec['gateways'] : [];
      if (gateways.length > 0 && !gateways.includes('mesh')) return false;
      const hosts = Array.isArray(spec['hosts']) ? spec['hosts'].filter((h): h is string => typeof h === 'string') : [];
      return hosts.some((h) => hostMatches(resolveHost(h, r.metadata.namespace ?? 'default', clusterDomain), host));
    })
    .sort((a, b) =>
      `${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}` ? -1 : 1,
    );
}

/**
 * The RouteConfiguration `host:port`: one virtual host for `host` and `host:port`, routes
 * from the VirtualServices of the host (the first one's routes first, as istiod merges),
 * then, without any, one route to the host's own cluster.
 */
export function buildRouteConfiguration(
  host: string,
  port: number,
  services: readonly Resource[],
  ctx: RouteContext,
): { body: Json; usesFault: boolean } {
  const routes: Json[] = [];
  for (const vs of services) {
    const http = Array.isArray((vs.spec as Json)['http'])
      ? ((vs.spec as Json)['http'] as unknown[]).filter(isRecord)
      : [];
    http.forEach((h, i) => routes.push(...httpRoutes(h, i, vs, port, ctx)));
  }
  if (services.length === 0) {
    const cluster = clusterName(host, port);
    const hashing = hashPolicy(cluster, 'the default route', ctx);
    routes.push({
      name: 'default',
      match: { prefix: '/' },
      route: { cluster, ...(hashing.length > 0 ? { hash_policy: hashing } : {}) },
    });
  }
  const name = listenerName(host, port);
  const body = { name, virtual_hosts: [{ name, domains: [host, name], routes }] };
  return { body, usesFault: routes.some((r) => r['typed_per_filter_config'] !== undefined) };
}
