/**
 * RouteTable delegation: a route with a `delegate` action is replaced by the routes of the
 * route tables it selects, each matcher narrowed by the parent route's matchers (a child path
 * must stay under the parent's prefix). Children are ordered by table weight (highest first)
 * or, with ROUTE_SPECIFICITY, their routes by how specific their matchers are.
 */
import type { DelegateAction, HttpRequestMatcher, HttpRoute, RouteTableSpec } from './gloo-types.ts';
import type { Owned } from './inventory.ts';
import { matchesObjectSelector } from './selectors.ts';

/**
 * The route tables a delegate action selects (a selector without namespace means the parent's), by weight then name.
 */
export function delegatedTables(
  parent: Owned<RouteTableSpec>,
  action: DelegateAction,
  all: readonly Owned<RouteTableSpec>[],
): Owned<RouteTableSpec>[] {
  const selectors = (action.routeTables ?? []).map((s) => ({ ...s, namespace: s.namespace || parent.namespace }));
  const chosen = all.filter(
    (rt) =>
      rt !== parent &&
      selectors.some((s) =>
        matchesObjectSelector(s, { name: rt.name, namespace: rt.namespace, cluster: rt.cluster, labels: rt.labels }),
      ),
  );
  return chosen.sort(
    (a, b) =>
      (b.spec.weight ?? 0) - (a.spec.weight ?? 0) ||
      (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

function uriPath(m: HttpRequestMatcher): string | undefined {
  return m.uri?.prefix ?? m.uri?.exact;
}

/** A child matcher narrowed by a parent matcher, or undefined when the child path leaves the parent's prefix. */
function narrow(parent: HttpRequestMatcher, child: HttpRequestMatcher): HttpRequestMatcher | undefined {
  const parentPrefix = parent.uri?.prefix;
  if (parentPrefix !== undefined && child.uri !== undefined) {
    const path = uriPath(child);
    if (path === undefined || !path.startsWith(parentPrefix)) return undefined;
  }
  return {
    ...parent,
    ...child,
    ...(child.uri === undefined && parent.uri !== undefined ? { uri: parent.uri } : {}),
    ...(parent.headers || child.headers ? { headers: [...(parent.headers ?? []), ...(child.headers ?? [])] } : {}),
    ...(parent.queryParameters || child.queryParameters
      ? { queryParameters: [...(parent.queryParameters ?? []), ...(child.queryParameters ?? [])] }
      : {}),
  };
}

/** Matchers of a child route under a parent route; `dropped` counts combinations that left the parent's prefix. */
export function mergeMatchers(
  parent: readonly HttpRequestMatcher[] | undefined,
  child: readonly HttpRequestMatcher[] | undefined,
): { matchers: HttpRequestMatcher[]; dropped: number } {
  const parents = parent?.length ? parent : [{}];
  const children = child?.length ? child : [{}];
  const matchers: HttpRequestMatcher[] = [];
  let dropped = 0;
  for (const c of children) {
    for (const p of parents) {
      const merged = narrow(p, c);
      if (merged) matchers.push(merged);
      else dropped += 1;
    }
  }
  const empty = matchers.length === 1 && Object.keys(matchers[0] as object).length === 0;
  return { matchers: empty ? [] : matchers, dropped };
}

/** A sort key for ROUTE_SPECIFICITY: exact paths first, then longer prefixes, then regexes, then more headers. */
export function specificity(route: HttpRoute): number {
  const best = (route.matchers ?? []).reduce((acc, m) => {
    const uri = m.uri;
    const score =
      uri?.exact !== undefined
        ? 3_000_000 + uri.exact.length
        : uri?.prefix !== undefined
          ? 2_000_000 + uri.prefix.length * 100
          : uri?.regex !== undefined
            ? 1_000_000 + uri.regex.length
            : 0;
    return Math.max(acc, score + (m.headers?.length ?? 0) * 10 + (m.queryParameters?.length ?? 0));
  }, 0);
  return best;
}
