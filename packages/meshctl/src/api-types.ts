/**
 * The management server's HTTP API (/api/v1) as meshctl reads it. These are
 * wire shapes: timestamps are ISO strings, absent things are null.
 */
import type {
  ClusterView as RegistryClusterView,
  HeldOutputView,
  ResourceView as RegistryResourceView,
} from '@meshrelay/registry';

export type { InputSnapshot, OutputSnapshot, Provenance, Resource } from '@meshrelay/api';

/** The cluster view the server sends (the shared API contract in @meshrelay/registry). */
export type ClusterView = RegistryClusterView;

/** Where an agent dials and the root CA it must trust. */
export interface RelayEndpoint {
  readonly address: string;
  readonly caBundlePem: string;
}

/** Answer of POST /api/v1/clusters. The token is in clear here and nowhere else. */
export interface RegistrationResponse {
  readonly cluster: ClusterView;
  readonly token: string;
  readonly tokenExpiresAt: string;
  readonly relay: RelayEndpoint;
}

/** Answer of POST /api/v1/clusters/:name/token. */
export interface TokenResponse {
  readonly token: string;
  readonly tokenExpiresAt: string;
  readonly relay: RelayEndpoint;
}

export interface RegisterRequest {
  readonly name: string;
  readonly clusterDomain?: string;
  readonly trustDomain?: string;
  readonly skipWarming?: boolean;
}

export interface ClusterUpdateRequest {
  readonly clusterDomain?: string;
  readonly trustDomain?: string;
  readonly skipWarming?: boolean;
}

/** Answer of GET /api/v1/status. */
export interface ServerStatus {
  readonly replica: string;
  readonly store: { readonly backend: string; readonly redisUp: boolean; readonly pendingWriteBack: number };
  readonly translation: {
    readonly gate: { readonly state: string; readonly [field: string]: unknown };
    readonly heldSince?: string;
    readonly windowEndsAt?: string;
    readonly lastRunAt?: string;
    readonly problems: readonly { readonly cluster?: string; readonly resource?: string; readonly reason: string }[];
    readonly admitted: readonly { readonly cluster: string; readonly inputHash: string }[];
  };
  readonly clusters: number;
  /** The Workspaces the server runs with (absent from servers before this field). */
  readonly workspaces?: {
    readonly mode: 'implicit-global' | 'defined';
    readonly names: readonly string[];
    readonly notice: string | null;
    /** Where they come from (absent from servers before this field). */
    readonly source?: 'file' | 'kubernetes' | 'none';
    /** Workspace CRs not (or only in a previous version) in force. */
    readonly problems?: readonly string[];
  };
}

export interface HealthResponse {
  readonly status: string;
  readonly replica: string;
}

export interface ReadyResponse {
  readonly ready: boolean;
  readonly replica: string;
}

/** Answer of GET /api/v1/safe-mode: what holds translation on the answering replica. */
export interface SafeModeStatus {
  readonly active: boolean;
  /** What holds translation; null while it runs. */
  readonly mode: 'safe-mode' | 'safe-start-window' | null;
  /** Required clusters whose input is not present (while held), or left out (after a window elapsed). */
  readonly missing: readonly string[];
  readonly since: string | null;
  /** When the safe-start window ends; null for safe mode, which has no timeout. */
  readonly windowEndsAt: string | null;
  /** Why the gate is open (e.g. all-required-present, window-elapsed); null while held. */
  readonly openReason: string | null;
  /** What an operator can do; "NAME" stands for a missing cluster. */
  readonly waysOut: readonly string[];
}

/**
 * An output the blast-radius guard holds back until an operator releases it or
 * the missing inputs arrive (the shared API contract in @meshrelay/registry).
 */
export type HeldOutput = HeldOutputView;

/** Answer of POST /api/v1/clusters/:name/output/release. */
export interface ReleaseResponse {
  readonly released: HeldOutput;
}

/** One Gloo resource with its approval and outputs, as GET /api/v1/resources lists it. */
export type ResourceView = RegistryResourceView;

/** The filters of GET /api/v1/resources (kind: a Gloo kind, any case, singular or plural). */
export interface ResourceQuery {
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly cluster?: string;
  readonly approval?: string;
}

/** One proxy on a cluster agent's xDS server, as GET /api/v1/xds/proxies reports it. */
export interface DataPlaneProxyView {
  readonly nodeId: string;
  readonly locality: string;
  /** By type (lds, rds, cds, eds): some subscribed names, how many in all, the last ACKed version. */
  readonly types: Readonly<
    Record<string, { readonly names: readonly string[]; readonly subscribed: number; readonly ackedVersion: string }>
  >;
  readonly nacks: number;
  readonly lastNack?: {
    readonly typeUrl: string;
    readonly version: string;
    readonly reason: string;
    readonly at: string;
  };
}

/** One cluster's data plane: its agent's last report (`reported: false` when it never sent one). */
export interface DataPlaneView {
  readonly cluster: string;
  readonly reported: boolean;
  readonly replica?: string;
  readonly receivedAt?: string;
  readonly agentConnected: boolean;
  readonly serving: boolean;
  readonly proxies: readonly DataPlaneProxyView[];
  readonly proxiesNotListed: number;
  readonly findings: readonly {
    readonly source: string;
    readonly sources: readonly string[];
    readonly field: string;
    readonly message: string;
  }[];
}

/** GET /api/v1/interests (DESIGN §17). */
export interface InterestsView {
  /** Whether the server scopes outputs by interest (--interest-scoped-outputs). */
  readonly scoped: boolean;
  readonly clusters: readonly {
    readonly cluster: string;
    readonly leases: readonly {
      readonly host: string;
      readonly source: string;
      readonly renewedAt: string;
      readonly expiresAt: string;
    }[];
    /** The VirtualDestinations its last output carried (or left out: reason `none`), and why. */
    readonly destinations: readonly { readonly destination: string; readonly reason: string }[];
  }[];
  readonly destinations: readonly {
    readonly destination: string;
    readonly hosts: readonly string[];
    readonly receiving: readonly string[];
    readonly notReceiving: readonly string[];
  }[];
}
