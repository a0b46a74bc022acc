/**
 * Which route policy (RetryTimeoutPolicy, FaultInjectionPolicy, HeaderManipulationPolicy,
 * CORSPolicy, MirrorPolicy) applies to each RouteTable route, the way Gloo's applyToRoutes
 * selects: by the labels of the route or its route table (plus namespace and cluster of the
 * route table), or by the route's forwardTo destinations. One policy per route: the first by
 * (namespace, name); the others are reported.
 */
import type {
  DestinationReference,
  DestinationSelector,
  HttpRoute,
  RetryTimeoutPolicySpec,
  RouteSelector,
  RouteTableSpec,
} from './gloo-types.ts';

/** What every route policy spec has: the routes it selects. */
export interface RoutePolicySpec {
  readonly applyToRoutes?: readonly RouteSelector[];
}
import { describeOwned, type Owned } from './inventory.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { hasLabels, matchesObjectSelector, type Selectable } from './selectors.ts';

/** Looks up what a forwardTo destination refers to (for label/cluster matching). */
export type DestinationLookup = (rt: Owned<RouteTableSpec>, ref: DestinationReference) => Selectable | undefined;

function matchesRouteLabels(
  selector: NonNullable<RouteSelector['route']>,
  rt: Owned<RouteTableSpec>,
  route: HttpRoute,
): boolean {
  if (selector.namespace && selector.namespace !== rt.namespace) return false;
  if (selector.cluster && selector.cluster !== rt.cluster) return false;
  return hasLabels({ ...rt.labels, ...(route.labels ?? {}) }, selector.labels);
}

function matchesDestination(
  selector: DestinationSelector,
  rt: Owned<RouteTableSpec>,
  dest: DestinationReference,
  lookup: DestinationLookup,
): boolean {
  if ((selector.kind ?? 'SERVICE') !== (dest.kind ?? 'SERVICE')) return false;
  if (selector.port?.number !== undefined && selector.port.number !== dest.port?.number) return false;
  if (selector.port?.name !== undefined && selector.port.name !== dest.port?.name) return false;
  const target = lookup(rt, dest) ?? {
    name: dest.ref.name,
    namespace: dest.ref.namespace ?? rt.namespace,
    cluster: dest.ref.cluster ?? rt.cluster,
    labels: {},
    workspace: rt.workspace,
  };
  return matchesObjectSelector(selector.selector, target);
}

function selectsRoute(
  policy: Owned<RoutePolicySpec>,
  rt: Owned<RouteTableSpec>,
  route: HttpRoute,
  lookup: DestinationLookup,
): boolean {
  // A policy applies only to routes of its own workspace.
  if (rt.workspace !== policy.workspace) return false;
  const selectors = policy.spec.applyToRoutes ?? [];
  if (selectors.length === 0) return true;
  return selectors.some((s) => {
    if (s.route) return matchesRouteLabels(s.route, rt, route);
    if (s.withDestinations) {
      const dests = route.forwardTo?.destinations?.length
        ? route.forwardTo.destinations
        : rt.spec.defaultDestination
          ? [rt.spec.defaultDestination]
          : [];
      return dests.some((d) => matchesDestination(s.withDestinations as DestinationSelector, rt, d, lookup));
    }
    return true;
  });
}

/** The policy of one kind for each route of `rt`, by route index (undefined = none). */
export function routePoliciesFor<T extends RoutePolicySpec>(
  rt: Owned<RouteTableSpec>,
  policies: readonly Owned<T>[],
  lookup: DestinationLookup,
  problems: ProblemSink,
): (Owned<T> | undefined)[] {
  return (rt.spec.http ?? []).map((route, i) => {
    let winner: Owned<T> | undefined;
    for (const policy of policies) {
      if (!selectsRoute(policy, rt, route, lookup)) continue;
      if (!winner) winner = policy;
      else {
        problems.add({
          cluster: policy.cluster,
          resource: describeOwned(policy),
          reason: `not applied to ${describeOwned(rt)} route ${route.name ?? i}: ${describeOwned(winner)} already applies to it`,
        });
      }
    }
    return winner;
  });
}

/** RetryTimeoutPolicy config -> the VirtualService route fields `retries` and `timeout`. */
export function retryFields(policy: Owned<RetryTimeoutPolicySpec> | undefined): Record<string, unknown> {
  if (!policy) return {};
  const { retries, requestTimeout } = policy.spec.config;
  const out: Record<string, unknown> = {};
  if (retries) {
    const r: Record<string, unknown> = {};
    if (retries.attempts !== undefined) r['attempts'] = retries.attempts;
    if (retries.perTryTimeout !== undefined) r['perTryTimeout'] = retries.perTryTimeout;
    if (retries.retryOn !== undefined) r['retryOn'] = retries.retryOn;
    if (retries.retryRemoteLocalities !== undefined) r['retryRemoteLocalities'] = retries.retryRemoteLocalities;
    out['retries'] = r;
  }
  if (requestTimeout !== undefined) out['timeout'] = requestTimeout;
  return out;
}
