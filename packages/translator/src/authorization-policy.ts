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
import type { ClusterIndex, ServiceInfo } from './cluster-index.ts';
import { objectKey } from './cluster-index.ts';
import type { AccessPolicySpec, IdentitySelector, StringMap } from './gloo-types.ts';
import { describeOwned, type Owned } from './inventory.ts';
import { accessPolicyOutputName, outputMetadata } from './names.ts';
import type { ProblemSink } from './problems.ts';
import { hasLabels, matchesObjectSelector } from './selectors.ts';
import type { ClusterContext } from './service-entry.ts';
import type { VirtualDestinationModel } from './virtual-destinations.ts';

export interface AccessContext {
  /** Sorted by cluster. */
  readonly indexes: readonly ClusterIndex[];
  readonly virtualDestinations: readonly VirtualDestinationModel[];
  /** Every known cluster (admitted or registered), sorted by name. */
  readonly clusters: readonly ClusterContext[];
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
            .flatMap((index) => [...index.pods].filter(([, pod]) => hasLabels(pod.labels, labels)).map(([key]) => key.split('/')[0] as string)),
        );
    for (const namespace of namespaces) targets.push({ namespace, suffix: `w${i}`, matchLabels: labels });
  });
  return targets;
}

function selectedServices(policy: Owned<AccessPolicySpec>, ctx: AccessContext): ServiceInfo[] {
  const selectors = policy.spec.applyToDestinations ?? [];
  const all = ctx.indexes.flatMap((index) => index.services);
  if (selectors.length === 0) return all;
  return selectors.flatMap((s) => {
    if ((s.kind ?? 'SERVICE') === 'SERVICE') return all.filter((svc) => matchesObjectSelector(s.selector, svc));
    return ctx.virtualDestinations
      .filter((vd) => matchesObjectSelector(s.selector, { name: vd.owned.name, namespace: vd.owned.namespace, cluster: vd.owned.cluster, labels: vd.owned.labels }))
      .flatMap((vd) => vd.backends.map((b) => b.service));
  });
}

function destinationTargets(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Target[] {
  const byKey = new Map<string, ServiceInfo>();
  const sorted = selectedServices(policy, ctx).sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  for (const svc of sorted) {
    const key = objectKey(svc.namespace, svc.name);
    const first = byKey.get(key);
    if (!first) {
      byKey.set(key, svc);
    } else if (JSON.stringify(first.selector ?? {}) !== JSON.stringify(svc.selector ?? {})) {
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
      ctx.problems.add({ cluster: policy.cluster, resource: describeOwned(policy), reason: `Service ${key} has no pod selector; no AuthorizationPolicy for it` });
      continue;
    }
    targets.push({ namespace: svc.namespace, suffix: svc.name, matchLabels: svc.selector });
  }
  return targets;
}

/** Principals for one service-account selector, or undefined when it cannot be expressed. */
function principals(policy: Owned<AccessPolicySpec>, sa: NonNullable<IdentitySelector['serviceAccountSelector']>, ctx: AccessContext): string[] | undefined {
  if (sa.labels && Object.keys(sa.labels).length > 0) {
    ctx.problems.add({ cluster: policy.cluster, resource: describeOwned(policy), reason: 'serviceAccountSelector.labels cannot be matched (service accounts are not discovered); that client selector allows nothing' });
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
      const namespaces = uniqueSorted([...(index?.pods ?? [])].filter(([, p]) => p.serviceAccount === sa.name).map(([key]) => key.split('/')[0] as string));
      for (const ns of namespaces) out.push(`${c.trustDomain}/ns/${ns}/sa/${sa.name}`);
    }
  }
  return uniqueSorted(out);
}

/** The `from` sources of the rule; `undefined` means any client, `[]` means no client at all. */
function sources(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Record<string, unknown>[] | undefined {
  const authz = policy.spec.config.authz;
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

/** Where an AccessPolicy's AuthorizationPolicies go: one per selected workload group. */
export function policyTargets(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Target[] {
  return policy.spec.applyToWorkloads?.length ? workloadTargets(policy, ctx) : destinationTargets(policy, ctx);
}

/** The AuthorizationPolicies of one AccessPolicy (identical in every cluster). */
export function buildAuthorizationPolicies(policy: Owned<AccessPolicySpec>, ctx: AccessContext): Resource[] {
  const authz = policy.spec.config.authz;
  const from = sources(policy, ctx);
  const operation: Record<string, unknown> = {};
  if (authz.allowedPaths?.length) operation['paths'] = [...authz.allowedPaths];
  if (authz.allowedMethods?.length) operation['methods'] = [...authz.allowedMethods];
  const rule: Record<string, unknown> = {};
  if (from) rule['from'] = from;
  if (Object.keys(operation).length > 0) rule['to'] = [{ operation }];
  // Clients were named but none could be resolved: an ALLOW policy without rules allows nothing.
  const rules = from && from.length === 0 ? undefined : [rule];
  return policyTargets(policy, ctx).map((t) => {
    const spec: Record<string, unknown> = { action: 'ALLOW' };
    if (t.matchLabels) spec['selector'] = { matchLabels: { ...t.matchLabels } };
    if (rules) spec['rules'] = rules;
    return {
      apiVersion: KINDS.AuthorizationPolicy.apiVersion,
      kind: KINDS.AuthorizationPolicy.kind,
      metadata: outputMetadata(accessPolicyOutputName(policy, t.namespace, t.suffix), t.namespace),
      spec,
    };
  });
}
