/**
 * The route policies of one route and the VirtualService route fields they become:
 * RetryTimeoutPolicy -> retries/timeout, FaultInjectionPolicy -> fault,
 * HeaderManipulationPolicy -> headers, CORSPolicy -> corsPolicy, MirrorPolicy -> mirror.
 */
import type {
  CorsPolicySpec,
  FaultInjectionPolicySpec,
  HeaderManipulationPolicySpec,
  MirrorPolicySpec,
  RetryTimeoutPolicySpec,
  RouteTableSpec,
  StringMatch,
} from '../gloo/gloo-types.ts';
import type { Inventory, Owned } from '../gloo/inventory.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { retryFields, routePoliciesFor, type DestinationLookup } from '../gloo/route-policies.ts';

export interface RoutePolicySet {
  readonly retry?: Owned<RetryTimeoutPolicySpec>;
  readonly fault?: Owned<FaultInjectionPolicySpec>;
  readonly headers?: Owned<HeaderManipulationPolicySpec>;
  readonly cors?: Owned<CorsPolicySpec>;
  readonly mirror?: Owned<MirrorPolicySpec>;
}

/** The policies of each route of `rt`, by route index. */
export function routePolicySets(
  rt: Owned<RouteTableSpec>,
  inventory: Inventory,
  lookup: DestinationLookup,
  problems: ProblemSink,
): RoutePolicySet[] {
  const retry = routePoliciesFor(rt, inventory.retryTimeoutPolicies, lookup, problems);
  const fault = routePoliciesFor(rt, inventory.faultInjectionPolicies, lookup, problems);
  const headers = routePoliciesFor(rt, inventory.headerManipulationPolicies, lookup, problems);
  const cors = routePoliciesFor(rt, inventory.corsPolicies, lookup, problems);
  const mirror = routePoliciesFor(rt, inventory.mirrorPolicies, lookup, problems);
  return (rt.spec.http ?? []).map((_, i) => ({
    retry: retry[i],
    fault: fault[i],
    headers: headers[i],
    cors: cors[i],
    mirror: mirror[i],
  }));
}

function percentage(value: number | undefined): Record<string, unknown> {
  return value === undefined ? {} : { percentage: { value } };
}

function faultFields(policy: Owned<FaultInjectionPolicySpec> | undefined): Record<string, unknown> {
  if (!policy) return {};
  const { delay, abort } = policy.spec.config;
  const fault: Record<string, unknown> = {};
  if (delay) fault['delay'] = { fixedDelay: delay.fixedDelay, ...percentage(delay.percentage) };
  if (abort) fault['abort'] = { httpStatus: abort.httpStatus, ...percentage(abort.percentage) };
  return { fault };
}

function headerOperations(
  remove: readonly string[] | undefined,
  append: Readonly<Record<string, string>> | undefined,
): Record<string, unknown> | undefined {
  const ops: Record<string, unknown> = {};
  if (append && Object.keys(append).length > 0) ops['add'] = { ...append };
  if (remove?.length) ops['remove'] = [...remove];
  return Object.keys(ops).length > 0 ? ops : undefined;
}

function headerFields(policy: Owned<HeaderManipulationPolicySpec> | undefined): Record<string, unknown> {
  if (!policy) return {};
  const c = policy.spec.config;
  const headers: Record<string, unknown> = {};
  const request = headerOperations(c.removeRequestHeaders, c.appendRequestHeaders);
  const response = headerOperations(c.removeResponseHeaders, c.appendResponseHeaders);
  if (request) headers['request'] = request;
  if (response) headers['response'] = response;
  return Object.keys(headers).length > 0 ? { headers } : {};
}

export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A Gloo StringMatch as Istio's (no suffix and no ignoreCase there: both become a regex). */
export function istioStringMatch(m: StringMatch): Record<string, string> {
  const flag = m.ignoreCase ? '(?i)' : '';
  if (m.exact !== undefined) return m.ignoreCase ? { regex: `${flag}${escapeRegex(m.exact)}` } : { exact: m.exact };
  if (m.prefix !== undefined)
    return m.ignoreCase ? { regex: `${flag}${escapeRegex(m.prefix)}.*` } : { prefix: m.prefix };
  if (m.regex !== undefined) return { regex: `${flag}${m.regex}` };
  return { regex: `${flag}.*${escapeRegex(m.suffix ?? '')}` };
}

function corsFields(policy: Owned<CorsPolicySpec> | undefined): Record<string, unknown> {
  if (!policy) return {};
  const c = policy.spec.config;
  const cors: Record<string, unknown> = {};
  if (c.allowOrigins?.length) cors['allowOrigins'] = c.allowOrigins.map(istioStringMatch);
  if (c.allowMethods?.length) cors['allowMethods'] = [...c.allowMethods];
  if (c.allowHeaders?.length) cors['allowHeaders'] = [...c.allowHeaders];
  if (c.exposeHeaders?.length) cors['exposeHeaders'] = [...c.exposeHeaders];
  if (c.maxAge !== undefined) cors['maxAge'] = c.maxAge;
  if (c.allowCredentials !== undefined) cors['allowCredentials'] = c.allowCredentials;
  return { corsPolicy: cors };
}

/** The route fields of every policy but the mirror (whose destination the caller resolves). */
export function routePolicyFields(set: RoutePolicySet | undefined): Record<string, unknown> {
  if (!set) return {};
  return {
    ...retryFields(set.retry),
    ...faultFields(set.fault),
    ...headerFields(set.headers),
    ...corsFields(set.cors),
  };
}
