import { isMeshConfigMap, isRecord, type Resource } from '@meshrelay/api';
import { parseMeshTrustDomain, MESH_CONFIG_NAME } from '../discovery/mesh-config.ts';
import type { WorkloadIdentity } from './workload-cert-files.ts';

/** Istio's default trust domain, in force when the mesh config names none. */
export const DEFAULT_TRUST_DOMAIN = 'cluster.local';

/**
 * The ServiceAccounts that need a workload certificate: each Pod's `spec.serviceAccountName`, or `default` for a
 * Pod that names none (as Kubernetes fills it in). Sorted, without repeats.
 */
export function workloadIdentitiesOf(resources: readonly Resource[]): WorkloadIdentity[] {
  const seen = new Map<string, WorkloadIdentity>();
  for (const r of resources) {
    if (r.apiVersion !== 'v1' || r.kind !== 'Pod') continue;
    const namespace = r.metadata.namespace ?? 'default';
    const spec = (r as { spec?: unknown }).spec;
    const named = isRecord(spec) ? spec['serviceAccountName'] : undefined;
    const serviceAccount = typeof named === 'string' && named !== '' ? named : 'default';
    seen.set(`${namespace}/${serviceAccount}`, { namespace, serviceAccount });
  }
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, id]) => id);
}

/**
 * The cluster's trust domain from the discovered mesh config (the `istio` ConfigMap before a revision's
 * `istio-<rev>`), else Istio's default `cluster.local`.
 */
export function trustDomainOf(resources: readonly Resource[]): string {
  const configs = resources
    .filter((r) => isMeshConfigMap(r))
    .sort((a, b) => (a.metadata.name === MESH_CONFIG_NAME ? -1 : b.metadata.name === MESH_CONFIG_NAME ? 1 : 0));
  for (const config of configs) {
    const parsed = parseMeshTrustDomain(config as Parameters<typeof parseMeshTrustDomain>[0]);
    if ('trustDomain' in parsed && parsed.trustDomain !== undefined) return parsed.trustDomain;
  }
  return DEFAULT_TRUST_DOMAIN;
}
