import type { KINDS } from './kinds.ts';

/** Registration record, shaped like Gloo's admin.gloo.solo.io/v2 KubernetesCluster. */
export interface ClusterCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
}

export interface KubernetesCluster {
  readonly apiVersion: typeof KINDS.KubernetesCluster.apiVersion;
  readonly kind: typeof KINDS.KubernetesCluster.kind;
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    /**
     * Changes on every (re-)registration; client certificates carry it, so a deregistered cluster's certificates stop
     * working.
     */
    readonly uid: string;
    readonly creationTimestamp: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly spec: {
    readonly clusterDomain?: string;
    /** SPIFFE trust domain of the cluster's workloads; overrides the one discovered from its Istio mesh config. */
    readonly trustDomain?: string;
    readonly skipWarming?: boolean;
    /**
     * Revocation mark (RFC 3339, whole seconds): client certificates of this cluster whose
     * notBefore is earlier are void on every replica. Written by `meshctl cluster revoke`.
     */
    readonly revokeCertificatesBefore?: string;
  };
  readonly status?: {
    readonly conditions?: readonly ClusterCondition[];
  };
}

export const CLUSTER_WARM_CONDITION = 'ClusterWarm';
export const DEFAULT_MANAGEMENT_NAMESPACE = 'gloo-mesh';

/** Kubernetes object names: DNS-1123 label (also what a cluster name must be). */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** Kubernetes object names for most kinds: DNS-1123 subdomain. */
export const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A DNS name as Kubernetes checks one (RFC 1123 subdomain: labels of at most 63 lowercase letters,
 * digits and "-", joined by "."), as a pattern string that JSON Schema (the HTTP API, the CRD's
 * RE2) and JavaScript all read the same way; the 253-character limit is a separate maxLength.
 */
export const DNS_NAME_PATTERN = '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$';
export const DNS_NAME_MAX_LENGTH = 253;
const DNS_NAME = new RegExp(DNS_NAME_PATTERN);

/** True for a DNS name (see DNS_NAME_PATTERN), at most 253 characters. */
export function isDnsName(value: string): boolean {
  return value.length <= DNS_NAME_MAX_LENGTH && DNS_NAME.test(value);
}

export function isValidClusterName(name: string): boolean {
  return DNS_LABEL.test(name);
}

export function clusterWarmCondition(cluster: KubernetesCluster): ClusterCondition | undefined {
  return cluster.status?.conditions?.find((c) => c.type === CLUSTER_WARM_CONDITION);
}

export function isClusterWarm(cluster: KubernetesCluster): boolean {
  return clusterWarmCondition(cluster)?.status === 'True';
}

/** The SPIFFE identity a relay client certificate carries for a cluster. */
export function clusterSpiffeId(trustDomain: string, cluster: string): string {
  return `spiffe://${trustDomain}/cluster/${cluster}`;
}
