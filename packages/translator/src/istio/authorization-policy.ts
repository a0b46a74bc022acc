/**
 * AccessPolicy -> AuthorizationPolicy (action ALLOW). The same policies go to every cluster:
 * principals name client service accounts SPIFFE-style with the trust domain of the client's
 * cluster, so a client in one cluster is recognised by a server in another.
 *
 * Each AuthorizationPolicy lives in the namespace of the workloads it selects (Istio applies
 * a non-root-namespace policy only to its own namespace), which may differ from the
 * AccessPolicy's namespace; its name then carries the AccessPolicy's namespace (see names.ts).
 */
import { KINDS, type Resource } from '@meshrelay/api';
import type { ClusterIndex, ServiceInfo } from '../gloo/cluster-index.ts';
import { objectKey } from '../gloo/cluster-index.ts';
import type {
  AccessPolicySpec,
  Authorization,
  IdentitySelector,
  ObjectSelector,
  StringMap,
} from '../gloo/gloo-types.ts';
import { describeOwned, type Owned } from '../gloo/inventory.ts';
import { accessPolicyOutputName, outputMetadata } from './names.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { sameContent } from '../engine/same-content.ts';
import { hasLabels, matchesObjectSelector } from '../gloo/selectors.ts';
import type { ClusterContext } from './service-entry.ts';
import { selectorCandidates, type VirtualDestinationModel } from '../gloo/virtual-destinations.ts';

/** Istio's per-policy dry-run switch. */
const DRY_RUN_ANNOTATION = 'istio.io/dry-run';

export interface AccessContext {
  /** Sorted by cluster. */
  readonly indexes: readonly ClusterIndex[];
  readonly virtualDestinations: readonly VirtualDestinationModel[];
  /** Every known cluster (admitted or registered), sorted by name. */
  readonly clusters: readonly ClusterContext[];
  /** The workspace owning a namespace of a cluster (a policy targets only its own workspace's workloads). */
  readonly workspaceOf: (cluster: string, namespace: string) => string | undefined;
  readonly problems: ProblemSink;
}

export interface Target {
  readonly namespace: string;
  readonly suffix: string;
  readonly matchLabels?: StringMap;
}

function uniqueSorted(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

/** A cluster's pods by label (`key=value` → their `namespace/name` keys), for workload selectors. */
function podsByLabel(index: ClusterIndex): ReadonlyMap<string, readonly string[]> {
  const byLabel = new Map<string, string[]>();
  for (const [key, pod] of index.pods) {
    for (const [k, v] of Object.entries(pod.labels)) {
      const list = byLabel.get(`${k}=${v}`);
      if (list) list.push(key);
      else byLabel.set(`${k}=${v}`, [key]);
    }
  }
  return byLabel;
}

/**
 * The `namespace/name` keys of the pods of `index` that may carry `labels`: those with its first
 * label, through an index built once per cluster index (and only when a workload selector asks),
 * every pod when there are no labels. A superset; the caller checks all the labels.
 */
function podCandidates(index: ClusterIndex, labels: StringMap | undefined): Iterable<string> {
  const first = labels && Object.entries(labels)[0];
  if (!first) return index.pods.keys();
  return index.derived(podsByLabel).get(`${first[0]}=${first[1]}`) ?? [];
}

function workloadTargets(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Target[] {
  const targets: Target[] = [];
  (policy.spec.applyToWorkloads ?? []).forEach((w, i) => {
    const sel = w.selector ?? {};
    const labels = sel.labels && Object.keys(sel.labels).length > 0 ? sel.labels : undefined;
    const namespaces = sel.namespace
      ? [sel.namespace]
      : uniqueSorted(
          ctx.indexes
            .filter((index) => !sel.cluster || index.cluster === sel.cluster)
            .flatMap((index) =>
              [...podCandidates(index, labels)]
                .filter(
                  (key) =>
                    hasLabels(index.pods.get(key)?.labels, labels) &&
                    ctx.workspaceOf(index.cluster, key.split('/')[0] as string) === policy.workspace,
                )
                .map((key) => key.split('/')[0] as string),
            ),
        );
    for (const namespace of namespaces) targets.push({ namespace, suffix: `w${i}`, matchLabels: labels });
  });
  return targets;
}

function selectedServices(policy: Owned<AccessPolicySpec>, ctx: AccessContext): ServiceInfo[] {
  const selectors = policy.spec.applyToDestinations ?? [];
  // Every Service of the policy's workspace: built only for selectors that need it (a scan of all clusters).
  let everyService: ServiceInfo[] | undefined;
  const all = (): ServiceInfo[] =>
    (everyService ??= ctx.indexes
      .flatMap((index) => index.services)
      .filter((svc) => svc.workspace === policy.workspace));
  if (selectors.length === 0) return all();
  // A selector with labels looks at the Services that carry its first label (each cluster's label index), not at all of
  // them.
  const selected = (selector: ObjectSelector | undefined): ServiceInfo[] =>
    ctx.indexes.flatMap((index) =>
      selectorCandidates(index, [selector ?? {}]).filter(
        (svc) => svc.workspace === policy.workspace && matchesObjectSelector(selector, svc),
      ),
    );
  return selectors.flatMap((s, i) => {
    if (s.kind === 'EXTERNAL_SERVICE') {
      // An AuthorizationPolicy cannot restrict an external service: fail closed rather than ignore it.
      ctx.problems.add({
        cluster: policy.cluster,
        resource: describeOwned(policy),
        reason: `applyToDestinations[${i}]: kind EXTERNAL_SERVICE cannot be enforced by Istio authorization; not translated`,
        approval: 'INVALID',
      });
      return [];
    }
    if ((s.kind ?? 'SERVICE') === 'SERVICE') return selected(s.selector);
    return ctx.virtualDestinations
      .filter(
        (vd) =>
          vd.owned.workspace === policy.workspace &&
          matchesObjectSelector(s.selector, {
            name: vd.owned.name,
            namespace: vd.owned.namespace,
            cluster: vd.owned.cluster,
            labels: vd.owned.labels,
            workspace: vd.owned.workspace,
          }),
      )
      .flatMap((vd) => vd.backends.map((b) => b.service));
  });
}

function destinationTargets(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Target[] {
  const byKey = new Map<string, ServiceInfo>();
  const sorted = selectedServices(policy, ctx).sort((a, b) =>
    a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0,
  );
  for (const svc of sorted) {
    const key = objectKey(svc.namespace, svc.name);
    const first = byKey.get(key);
    if (!first) {
      byKey.set(key, svc);
    } else if (!sameContent(first.selector ?? {}, svc.selector ?? {})) {
      ctx.problems.add({
        cluster: policy.cluster,
        resource: describeOwned(policy),
        reason: `Service ${key} selects different workloads in clusters ${first.cluster} and ${svc.cluster}; the selector from ${first.cluster} is used`,
      });
    }
  }
  const targets: Target[] = [];
  for (const [key, svc] of [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!svc.selector || Object.keys(svc.selector).length === 0) {
      ctx.problems.add({
        cluster: policy.cluster,
        resource: describeOwned(policy),
        reason: `Service ${key} has no pod selector; no AuthorizationPolicy for it`,
      });
      continue;
    }
    targets.push({ namespace: svc.namespace, suffix: svc.name, matchLabels: svc.selector });
  }
  return targets;
}

/** Per service account of a cluster: the sorted namespaces where pods run as it (an index, not a scan per policy). */
function namespacesByAccount(index: ClusterIndex): ReadonlyMap<string, readonly string[]> {
  return index.derived(buildNamespacesByAccount);
}

function buildNamespacesByAccount(index: ClusterIndex): ReadonlyMap<string, readonly string[]> {
  const sets = new Map<string, Set<string>>();
  for (const [key, pod] of index.pods) {
    if (pod.serviceAccount === undefined) continue;
    const set = sets.get(pod.serviceAccount) ?? new Set();
    set.add(key.split('/')[0] as string);
    sets.set(pod.serviceAccount, set);
  }
  return new Map([...sets].map(([account, namespaces]) => [account, uniqueSorted(namespaces)]));
}

/** Principals for one service-account selector, or undefined when it cannot be expressed. */
function principals(
  policy: Owned<AccessPolicySpec>,
  sa: NonNullable<IdentitySelector['serviceAccountSelector']>,
  ctx: AccessContext,
): string[] | undefined {
  if (sa.labels && Object.keys(sa.labels).length > 0) {
    ctx.problems.add({
      cluster: policy.cluster,
      resource: describeOwned(policy),
      reason:
        'serviceAccountSelector.labels cannot be matched (service accounts are not discovered); that client selector allows nothing',
    });
    return undefined;
  }
  const clusters = ctx.clusters.filter((c) => !sa.cluster || c.name === sa.cluster);
  const out: string[] = [];
  for (const td of uniqueSorted(clusters.map((c) => c.trustDomain))) {
    if (!sa.namespace && !sa.name) out.push(`${td}/*`);
    else if (!sa.name) out.push(`${td}/ns/${sa.namespace}/sa/*`);
    else if (sa.namespace) out.push(`${td}/ns/${sa.namespace}/sa/${sa.name}`);
  }
  if (sa.name && !sa.namespace) {
    // Istio principals allow only a leading or trailing `*`: find the namespaces where pods run as this account.
    for (const c of clusters) {
      const index = ctx.indexes.find((i) => i.cluster === c.name);
      const namespaces = index ? (namespacesByAccount(index).get(sa.name) ?? []) : [];
      for (const ns of namespaces) out.push(`${c.trustDomain}/ns/${ns}/sa/${sa.name}`);
    }
  }
  return uniqueSorted(out);
}

/** Where an AccessPolicy's outputs go: one per selected workload group. */
export function policyTargets(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Target[] {
  return policy.spec.applyToWorkloads?.length ? workloadTargets(policy, ctx) : destinationTargets(policy, ctx);
}

/** The `from` sources of one authorization; `undefined` means any client, `[]` means no client at all. */
function sources(
  policy: Owned<AccessPolicySpec>,
  authz: Authorization,
  ctx: AccessContext,
): Record<string, unknown>[] | undefined {
  const ipFields: Record<string, unknown> = {};
  if (authz.allowedIpBlocks?.length) ipFields['ipBlocks'] = [...authz.allowedIpBlocks];
  if (authz.allowedRemoteIpBlocks?.length) ipFields['remoteIpBlocks'] = [...authz.allowedRemoteIpBlocks];
  const anyIp = Object.keys(ipFields).length === 0 ? undefined : [{ source: ipFields }];
  const clients = authz.allowedClients ?? [];
  if (clients.length === 0 || clients.some((c) => !c.serviceAccountSelector && !c.requestIdentityMatcher)) return anyIp;
  const out: Record<string, unknown>[] = [];
  for (const client of clients) {
    const source: Record<string, unknown> = { ...ipFields };
    if (client.serviceAccountSelector) {
      const p = principals(policy, client.serviceAccountSelector, ctx);
      if (!p || p.length === 0) continue;
      source['principals'] = p;
    }
    const rim = client.requestIdentityMatcher;
    if (rim?.requestPrincipals?.length) source['requestPrincipals'] = [...rim.requestPrincipals];
    if (rim?.notRequestPrincipals?.length) source['notRequestPrincipals'] = [...rim.notRequestPrincipals];
    out.push({ source });
  }
  return out;
}

/** Header conditions of an authorization as Istio `when` conditions. */
function conditions(authz: Authorization): Record<string, unknown>[] {
  const headers = authz.match?.request?.headers ?? {};
  return Object.keys(headers)
    .sort()
    .map((name) => {
      const h = headers[name] ?? {};
      const condition: Record<string, unknown> = { key: `request.headers[${name}]` };
      if (h.values?.length) condition['values'] = [...h.values];
      if (h.notValues?.length) condition['notValues'] = [...h.notValues];
      return condition;
    })
    .filter((c) => Object.keys(c).length > 1);
}

/** The ALLOW rule of one authorization, or undefined when it admits no client at all. */
function rule(
  policy: Owned<AccessPolicySpec>,
  authz: Authorization,
  ctx: AccessContext,
): Record<string, unknown> | undefined {
  const from = sources(policy, authz, ctx);
  if (from && from.length === 0) return undefined;
  const operation: Record<string, unknown> = {};
  if (authz.allowedPaths?.length) operation['paths'] = [...authz.allowedPaths];
  if (authz.allowedMethods?.length) operation['methods'] = [...authz.allowedMethods];
  const out: Record<string, unknown> = {};
  if (from) out['from'] = from;
  if (Object.keys(operation).length > 0) out['to'] = [{ operation }];
  const when = conditions(authz);
  if (when.length > 0) out['when'] = when;
  return out;
}

/**
 * The authorizations that are enforced, and whether the policy is a dry run. Istio's dry run
 * is per policy: when only some authorizations are dry runs, those are left out (an ALLOW
 * rule not enforced allows nothing), which is narrower than the intent, never wider.
 */
function enforced(policy: Owned<AccessPolicySpec>, ctx: AccessContext): { list: Authorization[]; dryRun: boolean } {
  const all = [
    ...(policy.spec.config.authz ? [policy.spec.config.authz] : []),
    ...(policy.spec.config.authzList ?? []),
  ];
  const dry = all.filter((a) => a.dryRun === true);
  if (dry.length === 0 || dry.length === all.length) return { list: all, dryRun: dry.length > 0 };
  ctx.problems.add({
    cluster: policy.cluster,
    resource: describeOwned(policy),
    reason:
      'some authorizations are dry runs and others are not: the dry-run ones are not applied (Istio dry run is per policy)',
  });
  return { list: all.filter((a) => a.dryRun !== true), dryRun: false };
}

/** The AuthorizationPolicies of one AccessPolicy (identical in every cluster); none when it has no authz. */
export function buildAuthorizationPolicies(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Resource[] {
  const { list, dryRun } = enforced(policy, ctx);
  if (list.length === 0) return [];
  const rules = list.map((a) => rule(policy, a, ctx)).filter((r): r is Record<string, unknown> => r !== undefined);
  return policyTargets(policy, ctx).map((t) => {
    const spec: Record<string, unknown> = { action: 'ALLOW' };
    if (t.matchLabels) spec['selector'] = { matchLabels: { ...t.matchLabels } };
    // Clients were named but none could be resolved: an ALLOW policy without rules allows nothing.
    if (rules.length > 0) spec['rules'] = rules;
    const metadata = outputMetadata(accessPolicyOutputName(policy, t.namespace, t.suffix), t.namespace);
    return {
      apiVersion: KINDS.AuthorizationPolicy.apiVersion,
      kind: KINDS.AuthorizationPolicy.kind,
      metadata: dryRun ? { ...metadata, annotations: { [DRY_RUN_ANNOTATION]: 'true' } } : metadata,
      spec,
    };
  });
}

/** AccessPolicy config.authn.tlsMode -> one PeerAuthentication per selected workload group. */
export function buildPeerAuthentications(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Resource[] {
  const mode = policy.spec.config.authn?.tlsMode;
  if (mode === undefined) return [];
  return policyTargets(policy, ctx).map((t) => ({
    apiVersion: KINDS.PeerAuthentication.apiVersion,
    kind: KINDS.PeerAuthentication.kind,
    metadata: outputMetadata(accessPolicyOutputName(policy, t.namespace, t.suffix), t.namespace),
    spec: { ...(t.matchLabels ? { selector: { matchLabels: { ...t.matchLabels } } } : {}), mtls: { mode } },
  }));
}
