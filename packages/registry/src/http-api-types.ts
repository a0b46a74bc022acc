/**
 * JSON shapes of the management server's HTTP API (/api/v1) that both the server and meshctl
 * use: the server builds them, meshctl reads them. Types only — the contract between the two,
 * so that the CLI reaches the server over HTTP and never imports it. Timestamps are ISO
 * strings, absent things are null.
 */
import type { Approval, OutputRef, ResourceState } from '@meshrelay/translator';

/** The operator's view of one cluster, as the API, UI and meshctl show it. */
export interface ClusterView {
  readonly name: string;
  readonly uid: string;
  readonly createdAt: string;
  readonly clusterDomain: string | null;
  /** Set on the registration; null means the one the agent discovers (else cluster.local). */
  readonly trustDomain: string | null;
  readonly skipWarming: boolean;
  readonly warm: { readonly status: string; readonly reason: string; readonly since: string | null };
  /**
   * Set while the cluster's relay token was presented with a second key (refused) and no new
   * token has registered since: the token may have leaked, or the agent lost its key.
   */
  readonly relayTokenReuse: { readonly since: string; readonly message: string } | null;
  readonly connection: {
    readonly connected: boolean;
    readonly push: number;
    readonly pull: number;
    readonly replica: string | null;
    readonly disconnectedSince: string | null;
  };
  readonly input: {
    readonly hash: string;
    readonly epoch: string;
    readonly generation: number;
    readonly bytes: number;
    readonly resources: number;
    /** When this replica received it (null when it was read from Redis). */
    readonly receivedAt: string | null;
    /** True while the agent is disconnected: the snapshot is kept and still used. */
    readonly stale: boolean;
  } | null;
  readonly output: {
    readonly hash: string;
    readonly resources: number;
    readonly appliedHash: string | null;
    /** The blast-radius guard holds this cluster's newest output. */
    readonly held: boolean;
  } | null;
}

/** An output the blast-radius guard holds back, as the API sends it (`since` in ISO). */
export interface HeldOutputView {
  readonly cluster: string;
  readonly hash: string;
  readonly reason: 'delete-share' | 'missing-inputs';
  readonly message: string;
  /** Resources the output would delete. */
  readonly deleted: number;
  /** Resources the agent holds now. */
  readonly held: number;
  readonly missingClusters: readonly string[];
  readonly since: string;
}

/** Where an agent dials and the root CA it must trust. */
export interface RelayEndpointView {
  readonly address: string;
  readonly caBundlePem: string;
}

/**
 * Answer of POST /api/v1/clusters/:name/revoke: certificates of the cluster issued before
 * `revokedBefore` are void on every replica; `token` (in clear, here only) replaces every
 * earlier token.
 */
export interface RevocationResponse {
  readonly revokedBefore: string;
  readonly token: string;
  readonly tokenExpiresAt: string;
  readonly relay: RelayEndpointView;
}

/** One Gloo resource as GET /api/v1/resources lists it (a wire shape). */
export interface ResourceView {
  readonly kind: string;
  readonly apiVersion: string;
  readonly namespace: string;
  readonly name: string;
  /** The cluster whose input carries the resource (whose agent writes its status). */
  readonly cluster: string;
  readonly approval: Approval;
  readonly observedGeneration: number;
  readonly message: string;
  /** `Kind/namespace/name@cluster`, as the `meshrelay.io/sources` annotation of its outputs names it. */
  readonly source: string;
  /** Per consuming cluster: what this resource contributed there. */
  readonly clusters: Readonly<Record<string, ResourceState>>;
  readonly outputs: readonly OutputRef[];
}
