/** GET /api/v1/trust as meshctl reads it (the server's TrustStatus). */

export type TrustHold =
  | { readonly kind: 'cluster'; readonly cluster: string; readonly appliedGeneration: number; readonly since: string }
  | { readonly kind: 'old-root-leaves'; readonly until: string };

export interface TrustClusterView {
  readonly cluster: string;
  readonly reported: boolean;
  readonly reportedAt?: string;
  readonly appliedGeneration: number;
  readonly phase?: number;
  readonly trustDomain?: string;
  readonly intermediate?: { readonly rootId: string; readonly notAfter?: string };
  readonly workloads: number;
  readonly workloadsNearExpiry: readonly { readonly spiffeId: string; readonly notAfter: string }[];
}

export interface TrustStatusView {
  readonly enabled: boolean;
  readonly policy?: { readonly name: string; readonly namespace: string; readonly mgmtServerCa: string };
  readonly problems: readonly string[];
  readonly roots: readonly { readonly id: string; readonly origin: string; readonly notAfter: string }[];
  readonly generation?: number;
  readonly phase?: number;
  readonly since?: string;
  readonly signingRootId?: string;
  readonly bundleRootIds?: readonly string[];
  readonly holds: readonly TrustHold[];
  readonly clusters: readonly TrustClusterView[];
}
