/** RouteTable (+ RetryTimeoutPolicy) -> VirtualService, as seen from one consuming cluster. */
import { KINDS, type Resource } from '@meshrelay/api';
import type { ClusterIndex, ServiceInfo } from '../gloo/cluster-index.ts';
import { objectKey } from '../gloo/cluster-index.ts';
import type {
  DestinationReference,
  ExternalServiceSpec,
  ForwardToAction,
  VirtualGatewaySpec,
  HttpRequestMatcher,
  HttpRoute,
  RedirectResponseCode,
  RouteTableSpec,
  StringMatch,
} from '../gloo/gloo-types.ts';
import { describeOwned, type Owned } from '../gloo/inventory.ts';
import { outputMetadata, routeTableOutputName } from './names.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { delegatedTables, mergeMatchers, specificity } from '../gloo/delegation.ts';
import { gatewayRefs } from './virtual-gateway.ts';
import type { ExportKind, WorkspaceModel } from '../workspaces/workspaces.ts';
import { hasLabels, type Selectable } from '../gloo/selectors.ts';
import { subsetLabels, subsetName } from './subsets.ts';
import { escapeRegex, routePolicyFields, type RoutePolicySet } from './route-policy-fields.ts';
import type { ClusterContext } from './service-entry.ts';
import type { VirtualDestinationModel } from '../gloo/virtual-destinations.ts';
import { fillWeights } from '../gloo/weights.ts';
import { clusterDestinationName, isRemoteServiceRef } from './cluster-destinations.ts';
import { ownFirst, type ByName } from '../workspaces/workspace-names.ts';

/** Where a reference without namespace or cluster is resolved from: the resource that makes it. */
export interface Home {
  readonly namespace: string;
  readonly cluster: string;
  readonly workspace?: string;
}

export interface RouteContext {
  readonly consumer: ClusterContext;
  /** VirtualDestinations by `namespace/name` (one per workspace using the name). */
  readonly virtualDestinations: ByName<VirtualDestinationModel>;
  /** Every RouteTable (delegation targets) and the route policies of each. */
  readonly routeTables: readonly Owned<RouteTableSpec>[];
  readonly routePolicies: ReadonlyMap<Owned<RouteTableSpec>, readonly RoutePolicySet[]>;
  /** VirtualGateways by `namespace/name`. */
  readonly virtualGateways: ByName<Owned<VirtualGatewaySpec>>;
  /** ExternalServices by `namespace/name`. */
  readonly externalServices: ByName<Owned<ExternalServiceSpec>>;
  /** Indexes in sorted cluster order. */
  readonly indexes: readonly ClusterIndex[];
  /** What a workspace may reference. */
  readonly workspaces: WorkspaceModel;
  readonly problems: ProblemSink;
}

/** Whether `rt` may reference a resource of `kind` owned by `owner` (its workspace or what it imports). */
function canSee(
  rt: Home,
  owner: string | undefined,
  kind: ExportKind,
  ctx: RouteContext,
  object?: Selectable,
): boolean {
  return owner !== undefined && ctx.workspaces.visible(owner, rt.workspace ?? '', kind, object);
}

function uriMatch(uri: StringMatch): Record<string, unknown> {
  if (uri.exact !== undefined) return { uri: { exact: uri.exact }, ...(uri.ignoreCase ? { ignoreUriCase: true } : {}) };
  if (uri.prefix !== undefined)
    return { uri: { prefix: uri.prefix }, ...(uri.ignoreCase ? { ignoreUriCase: true } : {}) };
  if (uri.regex !== undefined) return { uri: { regex: uri.regex } };
  // Istio has no suffix match: a suffix is an anchored regex (case-insensitive when asked).
  return { uri: { regex: `${uri.ignoreCase ? '(?i)' : ''}.*${escapeRegex(uri.suffix ?? '')}` } };
}

function valueMatch(value: string | undefined, regex: boolean | undefined): Record<string, string> {
  if (value === undefined) return {}; // presence match
  return regex ? { regex: value } : { exact: value };
}

/** Gloo HTTPRequestMatcher -> Istio HTTPMatchRequest. */
export function httpMatch(m: HttpRequestMatcher): Record<string, unknown> {
  const out: Record<string, unknown> = m.uri ? uriMatch(m.uri) : {};
  const headers: Record<string, unknown> = {};
  const withoutHeaders: Record<string, unknown> = {};
  for (const h of m.headers ?? [])
    (h.invertMatch ? withoutHeaders : headers)[h.name.toLowerCase()] = valueMatch(h.value, h.regex);
  if (Object.keys(headers).length > 0) out['headers'] = headers;
  if (Object.keys(withoutHeaders).length > 0) out['withoutHeaders'] = withoutHeaders;
  if (m.queryParameters?.length)
    out['queryParams'] = Object.fromEntries(m.queryParameters.map((q) => [q.name, valueMatch(q.value, q.regex)]));
  if (m.method !== undefined) out['method'] = { exact: m.method };
  if (m.port !== undefined) out['port'] = m.port;
  return out;
}

/**
 * The Service a reference means: in the referenced (or the route table's) cluster, else the first cluster that has it.
 */
export function findService(
  rt: Home,
  ref: DestinationReference,
  indexes: readonly ClusterIndex[],
): ServiceInfo | undefined {
  const key = objectKey(ref.ref.namespace ?? rt.namespace, ref.ref.name);
  const home = ref.ref.cluster ?? rt.cluster;
  const local = indexes.find((i) => i.cluster === home)?.serviceByKey.get(key);
  if (local || ref.ref.cluster) return local;
  for (const index of indexes) {
    const found = index.serviceByKey.get(key);
    if (found) return found;
  }
  return undefined;
}

type Resolved = { host: string; port?: number } | { error: string };

function resolveVirtualDestination(rt: Home, ref: DestinationReference, ctx: RouteContext): Resolved {
  const key = objectKey(ref.ref.namespace ?? rt.namespace, ref.ref.name);
  const vd = ownFirst(
    ctx.virtualDestinations.get(key),
    rt.workspace,
    (v) => v.owned.workspace,
    (v) => canSee(rt, v.owned.workspace, 'VIRTUAL_DESTINATION', ctx, v.owned),
  );
  if (!vd) return { error: `VirtualDestination ${key} not found` };
  if (!canSee(rt, vd.owned.workspace, 'VIRTUAL_DESTINATION', ctx, vd.owned))
    return { error: `VirtualDestination ${key} is not exported to this workspace` };
  const host = vd.hosts[0] as string;
  if (ref.port?.name !== undefined)
    return { error: `VirtualDestination ${key} ports have no names; select port ${ref.port.name} by number` };
  if (ref.port?.number !== undefined) {
    if (!vd.ports.some((p) => p.number === ref.port?.number))
      return { error: `VirtualDestination ${key} has no port ${ref.port.number}` };
    return { host, port: ref.port.number };
  }
  if (vd.ports.length > 1)
    return { error: `VirtualDestination ${key} has several ports; the destination must select one` };
  return { host };
}

function resolveService(rt: Home, ref: DestinationReference, ctx: RouteContext): Resolved {
  const namespace = ref.ref.namespace ?? rt.namespace;
  const host = `${ref.ref.name}.${namespace}.svc.${ctx.consumer.clusterDomain}`;
  const service = findService(rt, ref, ctx.indexes);
  const key = objectKey(namespace, ref.ref.name);
  // With workspaces, a Service is reachable only when its workspace is this one or exports it here.
  if (ctx.workspaces.defined && !canSee(rt, service?.workspace, 'SERVICE', ctx, service))
    return { error: `Service ${key} is not in this workspace or exported to it` };
  if (ref.port?.number !== undefined) return { host, port: ref.port.number };
  if (ref.port?.name !== undefined) {
    const port = service?.ports.find((p) => p.name === ref.port?.name);
    return port ? { host, port: port.port } : { error: `Service ${key} has no port named ${ref.port.name}` };
  }
  if (service && service.ports.length > 1)
    return { error: `Service ${key} has several ports; the destination must select one` };
  return { host };
}

function resolveExternalService(rt: Home, ref: DestinationReference, ctx: RouteContext): Resolved {
  const key = objectKey(ref.ref.namespace ?? rt.namespace, ref.ref.name);
  const es = ownFirst(
    ctx.externalServices.get(key),
    rt.workspace,
    (e) => e.workspace,
    (e) => canSee(rt, e.workspace, 'EXTERNAL_SERVICE', ctx, e),
  );
  if (!es) return { error: `ExternalService ${key} not found` };
  if (!canSee(rt, es.workspace, 'EXTERNAL_SERVICE', ctx, es))
    return { error: `ExternalService ${key} is not exported to this workspace` };
  const host = es.spec.hosts[0] as string;
  const want = ref.port;
  if (want?.number !== undefined || want?.name !== undefined) {
    const port = es.spec.ports.find((p) =>
      want.number !== undefined ? p.number === want.number : p.name === want.name,
    );
    return port
      ? { host, port: port.number }
      : { error: `ExternalService ${key} has no port ${String(want.number ?? want.name)}` };
  }
  if (es.spec.ports.length > 1)
    return { error: `ExternalService ${key} has several ports; the destination must select one` };
  return { host };
}

/**
 * A Service in another named cluster is reached through the implicit VirtualDestination built
 * for it (see cluster-destinations.ts): the local host's endpoints are only this cluster's.
 */
function resolveRemoteService(rt: Home, ref: DestinationReference, ctx: RouteContext): Resolved {
  const service = resolveService(rt, ref, ctx);
  if ('error' in service) return service;
  const namespace = ref.ref.namespace ?? rt.namespace;
  const name = clusterDestinationName(ref.ref.name, ref.ref.cluster as string);
  const vd = ctx.virtualDestinations.get(objectKey(namespace, name))?.[0];
  if (!vd)
    return { error: `Service ${objectKey(namespace, ref.ref.name)} not found in cluster ${String(ref.ref.cluster)}` };
  return { host: vd.hosts[0] as string, ...(service.port !== undefined ? { port: service.port } : {}) };
}

export function resolveDestination(rt: Home, ref: DestinationReference, ctx: RouteContext): Resolved {
  if (isRemoteServiceRef(ref, ctx.consumer.name)) return resolveRemoteService(rt, ref, ctx);
  switch (ref.kind ?? 'SERVICE') {
    case 'VIRTUAL_DESTINATION':
      return resolveVirtualDestination(rt, ref, ctx);
    case 'EXTERNAL_SERVICE':
      return resolveExternalService(rt, ref, ctx);
    default:
      return resolveService(rt, ref, ctx);
  }
}

const REDIRECT_CODES: Readonly<Record<RedirectResponseCode, number>> = {
  MOVED_PERMANENTLY: 301,
  FOUND: 302,
  SEE_OTHER: 303,
  TEMPORARY_REDIRECT: 307,
  PERMANENT_REDIRECT: 308,
};

/** Gloo redirect / directResponse actions as Istio route fields. */
function fixedResponse(route: HttpRoute): Record<string, unknown> | undefined {
  if (route.redirect) {
    const r = route.redirect;
    const redirect: Record<string, unknown> = {};
    if (r.pathRedirect !== undefined) redirect['uri'] = r.pathRedirect;
    if (r.hostRedirect !== undefined) redirect['authority'] = r.hostRedirect;
    if (r.responseCode !== undefined) redirect['redirectCode'] = REDIRECT_CODES[r.responseCode];
    return { redirect };
  }
  if (route.directResponse) {
    const d = route.directResponse;
    return { directResponse: { status: d.status, ...(d.body !== undefined ? { body: { string: d.body } } : {}) } };
  }
  return undefined;
}

function rewriteOf(forwardTo: ForwardToAction): Record<string, unknown> | undefined {
  const rewrite: Record<string, unknown> = {};
  if (forwardTo.pathRewrite !== undefined) rewrite['uri'] = forwardTo.pathRewrite;
  if (forwardTo.regexRewrite !== undefined)
    rewrite['uriRegexRewrite'] = {
      match: forwardTo.regexRewrite.pattern.regex,
      rewrite: forwardTo.regexRewrite.substitution ?? '',
    };
  if (forwardTo.hostRewrite !== undefined) rewrite['authority'] = forwardTo.hostRewrite;
  return Object.keys(rewrite).length > 0 ? rewrite : undefined;
}

/**
 * One Istio HTTP route, or undefined for a route whose only action Meshrelay does not
 * implement (already reported). A route whose destinations cannot be resolved is replaced by
 * a 500 direct response (Gloo's ROUTE_REPLACEMENT failure mode) and reported; the rest of
 * the route table is unaffected.
 */
function httpRoute(
  rt: Owned<RouteTableSpec>,
  route: HttpRoute,
  index: number,
  policies: RoutePolicySet | undefined,
  ctx: RouteContext,
): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  if (route.name !== undefined) out['name'] = route.name;
  if (route.matchers?.length) out['match'] = route.matchers.map(httpMatch);
  const fixed = fixedResponse(route);
  if (fixed) return { ...out, ...fixed };
  const forwardTo = route.forwardTo;
  if (!forwardTo) return undefined;
  const refs = forwardTo.destinations?.length
    ? forwardTo.destinations
    : rt.spec.defaultDestination
      ? [rt.spec.defaultDestination]
      : [];
  const resolved = refs.map((ref) => resolveDestination(rt, ref, ctx));
  const failed = resolved.find((r): r is { error: string } => 'error' in r);
  const reason = refs.length === 0 ? 'has no destination and the route table has no defaultDestination' : failed?.error;
  if (reason !== undefined) {
    ctx.problems.add({
      cluster: rt.cluster,
      resource: describeOwned(rt),
      reason: `route ${route.name ?? index}: ${reason}; replaced by a 500 direct response`,
    });
    out['directResponse'] = { status: 500 };
    return out;
  }
  const weights = fillWeights(refs);
  out['route'] = resolved.map((r, i) => {
    const ok = r as { host: string; port?: number };
    const destination: Record<string, unknown> = { host: ok.host };
    if (ok.port !== undefined) destination['port'] = { number: ok.port };
    const ref = refs[i] as DestinationReference;
    // The host of a Service in another cluster holds only that cluster's endpoints: no cluster label to select by.
    const labels = isRemoteServiceRef(ref, ctx.consumer.name) ? { ...(ref.subset ?? {}) } : subsetLabels(ref);
    if ((refs[i]?.kind ?? 'SERVICE') !== 'EXTERNAL_SERVICE' && Object.keys(labels).length > 0)
      destination['subset'] = subsetName(labels);
    return refs.length > 1 ? { destination, weight: weights[i] } : { destination };
  });
  const rewrite = rewriteOf(forwardTo);
  if (rewrite) out['rewrite'] = rewrite;
  return { ...out, ...routePolicyFields(policies), ...mirrorFields(rt, policies, ctx) };
}

const MAX_DELEGATION_DEPTH = 8;

/** The child routes a delegate route stands for, narrowed by its matchers, each with its own table and policies. */
function delegatedRoutes(
  rt: Owned<RouteTableSpec>,
  route: HttpRoute,
  index: number,
  ctx: RouteContext,
  path: readonly Owned<RouteTableSpec>[],
  contributors: Set<string>,
): Record<string, unknown>[] {
  const action = route.delegate as NonNullable<HttpRoute['delegate']>;
  const where = `route ${route.name ?? index}`;
  if (path.length >= MAX_DELEGATION_DEPTH) {
    ctx.problems.add({
      cluster: rt.cluster,
      resource: describeOwned(rt),
      reason: `${where}: delegation deeper than ${MAX_DELEGATION_DEPTH} levels; left out`,
    });
    return [];
  }
  const children = delegatedTables(rt, action, ctx.routeTables).filter(
    (c) => !path.includes(c) && canSee(rt, c.workspace, 'ROUTE_TABLE', ctx, c),
  );
  if (children.length === 0)
    ctx.problems.add({
      cluster: rt.cluster,
      resource: describeOwned(rt),
      reason: `${where}: delegates to no route table`,
    });
  let entries = children.flatMap((child) => (child.spec.http ?? []).map((r, i) => ({ child, route: r, index: i })));
  if (action.sortMethod === 'ROUTE_SPECIFICITY')
    entries = [...entries].sort((a, b) => specificity(b.route) - specificity(a.route));
  return entries.flatMap(({ child, route: childRoute, index: i }) => {
    contributors.add(child.source);
    const { matchers, dropped } = mergeMatchers(route.matchers, childRoute.matchers);
    if (dropped > 0)
      ctx.problems.add({
        cluster: child.cluster,
        resource: describeOwned(child),
        reason: `route ${childRoute.name ?? i}: a matcher leaves the path prefix of ${describeOwned(rt)} ${where}; that matcher is left out`,
      });
    if (matchers.length === 0 && dropped > 0) return [];
    const narrowed: HttpRoute = { ...childRoute, matchers };
    return routesOf(child, narrowed, i, ctx, [...path, child], contributors);
  });
}

function routesOf(
  rt: Owned<RouteTableSpec>,
  route: HttpRoute,
  index: number,
  ctx: RouteContext,
  path: readonly Owned<RouteTableSpec>[],
  contributors: Set<string>,
): Record<string, unknown>[] {
  if (route.delegate) return delegatedRoutes(rt, route, index, ctx, path, contributors);
  const policies = ctx.routePolicies.get(rt)?.[index];
  for (const p of [policies?.retry, policies?.fault, policies?.headers, policies?.cors, policies?.mirror])
    if (p) contributors.add(p.source);
  const out = httpRoute(rt, route, index, policies, ctx);
  return out ? [out] : [];
}

/**
 * MirrorPolicy -> `mirror` + `mirrorPercentage`; a mirror destination that cannot be resolved is reported and left out.
 */
function mirrorFields(
  rt: Owned<RouteTableSpec>,
  policies: RoutePolicySet | undefined,
  ctx: RouteContext,
): Record<string, unknown> {
  const mirror = policies?.mirror;
  if (!mirror) return {};
  const resolved = resolveDestination(mirror, mirror.spec.config.destination, ctx);
  if ('error' in resolved) {
    ctx.problems.add({
      cluster: mirror.cluster,
      resource: describeOwned(mirror),
      reason: `mirror destination for ${describeOwned(rt)}: ${resolved.error}; not mirrored`,
    });
    return {};
  }
  const mirrorOut = {
    host: resolved.host,
    ...(resolved.port !== undefined ? { port: { number: resolved.port } } : {}),
  };
  const pct = mirror.spec.config.percentage;
  return { mirror: mirrorOut, ...(pct !== undefined ? { mirrorPercentage: { value: pct } } : {}) };
}

/** Which proxies a VirtualService binds to in one consuming cluster; undefined when none there. */
interface Binding {
  readonly gateways?: string[];
  readonly exportTo?: string[];
}

/** Namespaces of the consumer's workloads that the route table's workloadSelectors select. */
function selectedNamespaces(rt: Owned<RouteTableSpec>, ctx: RouteContext): string[] {
  const index = ctx.indexes.find((i) => i.cluster === ctx.consumer.name);
  const namespaces = new Set<string>();
  (rt.spec.workloadSelectors ?? []).forEach((w, i) => {
    if (w.kind === 'VM') {
      ctx.problems.add({
        cluster: rt.cluster,
        resource: describeOwned(rt),
        reason: `spec.workloadSelectors[${i}]: kind VM is not supported by Meshrelay; ignored`,
      });
      return;
    }
    const sel = w.selector ?? {};
    if (sel.cluster && sel.cluster !== ctx.consumer.name) return;
    for (const [key, pod] of index?.pods ?? []) {
      const namespace = key.split('/')[0] as string;
      if (sel.namespace && sel.namespace !== namespace) continue;
      if (hasLabels(pod.labels, sel.labels)) namespaces.add(namespace);
    }
  });
  return [...namespaces].sort();
}

/**
 * virtualGateways -> `gateways` (plus `mesh` when workloads are selected too); workloadSelectors
 * -> exported only to the namespaces of the selected workloads, and only to clusters where they run.
 */
function binding(rt: Owned<RouteTableSpec>, ctx: RouteContext): Binding | undefined {
  const gateways: string[] = [];
  (rt.spec.virtualGateways ?? []).forEach((ref) => {
    const key = objectKey(ref.namespace ?? rt.namespace, ref.name);
    const vg = ownFirst(
      ctx.virtualGateways.get(key),
      rt.workspace,
      (g) => g.workspace,
      (g) => ctx.workspaces.visible(rt.workspace, g.workspace, 'ROUTE_TABLE', rt),
    );
    // A gateway of another workspace serves this route table only when the route table is exported to it.
    if (vg && ctx.workspaces.visible(rt.workspace, vg.workspace, 'ROUTE_TABLE', rt))
      gateways.push(...gatewayRefs(vg, ctx.consumer.name));
    else
      ctx.problems.add({
        cluster: rt.cluster,
        resource: describeOwned(rt),
        reason: `VirtualGateway ${key} not found; not bound to it`,
      });
  });
  const selectsWorkloads = (rt.spec.workloadSelectors ?? []).length > 0;
  if (!selectsWorkloads) return rt.spec.virtualGateways?.length ? (gateways.length > 0 ? { gateways } : undefined) : {};
  const namespaces = selectedNamespaces(rt, ctx);
  if (namespaces.length === 0) return gateways.length > 0 ? { gateways } : undefined;
  return gateways.length > 0 ? { gateways: [...gateways, 'mesh'], exportTo: namespaces } : { exportTo: namespaces };
}

/**
 * The VirtualService of a route table for one consuming cluster, with the other Gloo resources
 * that shaped it (delegated route tables, route policies); undefined when it serves nothing
 * there. A route table without hosts is a delegation target: it has no VirtualService of its own.
 */
export function buildVirtualService(
  rt: Owned<RouteTableSpec>,
  ctx: RouteContext,
): { resource: Resource; contributors: string[] } | undefined {
  const hosts = rt.spec.hosts ?? [];
  if (hosts.length === 0) return undefined;
  if (rt.spec.failureMode === 'FREEZE_CONFIG') {
    ctx.problems.add({
      cluster: rt.cluster,
      resource: describeOwned(rt),
      reason:
        'spec.failureMode FREEZE_CONFIG is not supported by Meshrelay; routes that cannot be resolved are replaced by a 500 direct response',
    });
  }
  const bound = binding(rt, ctx);
  if (!bound) return undefined;
  const metadata = outputMetadata(routeTableOutputName(rt.name), rt.namespace);
  const annotations = rt.spec.virtualServiceAnnotations;
  const contributors = new Set<string>();
  const spec: Record<string, unknown> = {
    hosts: [...hosts],
    http: (rt.spec.http ?? []).flatMap((route, i) => routesOf(rt, route, i, ctx, [rt], contributors)),
  };
  if (bound.gateways) spec['gateways'] = bound.gateways;
  if (bound.exportTo) spec['exportTo'] = bound.exportTo;
  const resource = {
    apiVersion: KINDS.VirtualService.apiVersion,
    kind: KINDS.VirtualService.kind,
    metadata:
      annotations && Object.keys(annotations).length > 0 ? { ...metadata, annotations: { ...annotations } } : metadata,
    spec,
  };
  return { resource, contributors: [...contributors].sort() };
}
