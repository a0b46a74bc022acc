import type { ClusterCondition, KubernetesCluster } from '@meshrelay/api';

export interface RegisterOptions {
  readonly clusterDomain?: string;
  /** SPIFFE trust domain of the cluster's workloads (AuthorizationPolicy principals); a DNS name. */
  readonly trustDomain?: string;
  readonly skipWarming?: boolean;
}

export interface RegistrationResult {
  readonly cluster: KubernetesCluster;
  /** The relay identity token in clear. Returned once; only its hash is stored. */
  readonly token: string;
  readonly tokenExpiresAt: Date;
}

/** A revocation: the mark now recorded, and the new token (the earlier ones no longer work). */
export interface RevocationResult extends RegistrationResult {
  readonly revokedBefore: Date;
}

export interface ClusterUpdate {
  readonly skipWarming?: boolean;
  readonly clusterDomain?: string;
  readonly trustDomain?: string;
}

export type RegistryChange =
  | { readonly type: 'registered' | 'updated'; readonly cluster: KubernetesCluster }
  | { readonly type: 'deregistered'; readonly name: string };

/**
 * The durable cluster registry: KubernetesCluster records, relay identity token
 * hashes and the ClusterWarm condition. Reads are served from memory and are
 * safe to call at any time; the returned objects are frozen. Writes are durable
 * when their promise resolves. Listeners also hear changes made by other
 * processes sharing the same durable state (other replicas, an operator's edit).
 */
export interface ClusterRegistry {
  list(): readonly KubernetesCluster[];
  get(name: string): KubernetesCluster | undefined;
  /** Throws MESHRELAY_ERR_CLUSTER_EXISTS, MESHRELAY_ERR_INVALID_ARGUMENT for a bad name. */
  register(name: string, options: RegisterOptions): Promise<RegistrationResult>;
  /** Removes the record and its tokens. Throws MESHRELAY_ERR_CLUSTER_NOT_FOUND. */
  deregister(name: string): Promise<void>;
  /** Issues a new token; the previous one stays valid until the overlap window ends. */
  rotateToken(name: string): Promise<RegistrationResult>;
  /**
   * Voids every client certificate issued to the cluster so far, on every replica sharing the
   * durable state (spec.revokeCertificatesBefore = now), and replaces its token with no overlap:
   * a leaked token stops working too. Throws MESHRELAY_ERR_CLUSTER_NOT_FOUND.
   */
  revoke(name: string): Promise<RevocationResult>;
  /** Checks a token in constant time. Throws MESHRELAY_ERR_TOKEN_INVALID (never says which part was wrong). */
  verifyToken(name: string, token: string): Promise<KubernetesCluster>;
  update(name: string, update: ClusterUpdate): Promise<KubernetesCluster>;
  /** Sets a status condition (by type); a no-op when type, status and reason are unchanged. */
  setCondition(name: string, condition: Omit<ClusterCondition, 'lastTransitionTime'>): Promise<void>;
  onChange(listener: (change: RegistryChange) => void): () => void;
  close(): Promise<void>;
}
