// What operators see of the mesh trust (GET /api/v1/trust, meshctl trust status): a pure view of
// what the last tick read, the registered clusters and the time.

import { currentTarget, phaseOfGeneration, type RotationHold } from './rotation-state.ts';
import type { MeshTrustView } from './mesh-trust-service.ts';
import type { WorkloadCert } from './trust-records.ts';

/** A workload certificate with less than this left is listed as near expiry (agents renew by 20 % of 24 h). */
export const NEAR_EXPIRY_MS = 4 * 3600_000;
const MAX_NEAR_EXPIRY_LISTED = 20;

export interface ClusterTrustStatus {
  readonly cluster: string;
  readonly reported: boolean;
  readonly reportedAt?: string;
  readonly appliedGeneration: number;
  /** The phase of its applied generation; absent when it is further behind or never reported. */
  readonly phase?: number;
  readonly trustDomain?: string;
  readonly intermediate?: { readonly rootId: string; readonly notAfter?: string };
  /** The last intermediate the plane signed for it (a refused CSR leaves this as it was). */
  readonly lastSigned?: {
    readonly rootId: string;
    readonly generation: number;
    readonly notAfter: string;
    readonly at: string;
  };
  readonly workloads: number;
  readonly workloadsNearExpiry: readonly { readonly spiffeId: string; readonly notAfter: string }[];
  /** Earliest notAfter among the workload certificates it listed. */
  readonly earliestWorkloadNotAfter?: string;
}

export interface TrustStatus {
  readonly enabled: boolean;
  readonly policy?: { readonly name: string; readonly namespace: string; readonly mgmtServerCa: string };
  readonly problems: readonly string[];
  readonly roots: readonly { readonly id: string; readonly origin: string; readonly notAfter: string }[];
  readonly generation?: number;
  readonly phase?: number;
  readonly since?: string;
  readonly signingRootId?: string;
  readonly bundleRootIds?: readonly string[];
  /** Why the rotation does not move on: silent or lagging clusters (since when), or live old-root leaves. */
  readonly holds: readonly RotationHold[];
  readonly clusters: readonly ClusterTrustStatus[];
}

export function trustStatus(view: MeshTrustView, registered: readonly string[], now: Date): TrustStatus {
  const { policy, state } = view;
  const clusters = [...registered].sort().map((name) => clusterStatus(view, name, now));
  if (state === undefined) return { enabled: false, problems: view.problems, roots: [], holds: [], clusters };
  const target = currentTarget(state);
  return {
    enabled: policy !== undefined,
    ...(policy
      ? { policy: { name: policy.name, namespace: policy.namespace, mgmtServerCa: policy.mgmtServerCa.type } }
      : {}),
    problems: view.problems,
    roots: state.roots.map((r) => ({ id: r.id, origin: r.origin, notAfter: r.notAfter })),
    generation: state.generation,
    phase: state.phase,
    since: state.since,
    signingRootId: target.signingRootId,
    bundleRootIds: target.bundleRootIds,
    holds: view.holds,
    clusters,
  };
}

function clusterStatus(view: MeshTrustView, cluster: string, now: Date): ClusterTrustStatus {
  const record = view.records.get(cluster);
  if (record === undefined)
    return { cluster, reported: false, appliedGeneration: 0, workloads: 0, workloadsNearExpiry: [] };
  const phase = view.state ? phaseOfGeneration(view.state, record.appliedGeneration) : undefined;
  const near = record.workloads
    .filter((w) => w.notAfterMs - now.getTime() < NEAR_EXPIRY_MS)
    .sort((a, b) => a.notAfterMs - b.notAfterMs)
    .slice(0, MAX_NEAR_EXPIRY_LISTED)
    .map((w) => ({ spiffeId: w.spiffeId, notAfter: new Date(w.notAfterMs).toISOString() }));
  const earliest = earliestOf(record.workloads);
  return {
    cluster,
    reported: true,
    reportedAt: record.reportedAt,
    appliedGeneration: record.appliedGeneration,
    ...(phase !== undefined ? { phase } : {}),
    trustDomain: record.trustDomain,
    ...(record.intermediateRootId !== ''
      ? {
          intermediate: {
            rootId: record.intermediateRootId,
            ...(record.intermediateNotAfterMs > 0
              ? { notAfter: new Date(record.intermediateNotAfterMs).toISOString() }
              : {}),
          },
        }
      : {}),
    ...(record.signed !== undefined ? { lastSigned: record.signed } : {}),
    workloads: record.workloads.length + record.workloadsNotListed,
    workloadsNearExpiry: near,
    ...(earliest !== undefined ? { earliestWorkloadNotAfter: new Date(earliest).toISOString() } : {}),
  };
}

/** The earliest notAfter (ms) of the listed certificates, if any. */
export function earliestOf(workloads: readonly WorkloadCert[]): number | undefined {
  return workloads.length === 0 ? undefined : Math.min(...workloads.map((w) => w.notAfterMs));
}

/**
 * The status written on the RootTrustPolicy CR: its active roots and each registered cluster's
 * phase. Nothing in it changes between ticks unless the trust did, so it is written only then.
 */
export function policyStatus(view: MeshTrustView, registered: readonly string[]): Record<string, unknown> {
  const { state } = view;
  return {
    state: view.problems.length === 0 ? 'ACCEPTED' : 'WARNING',
    activeRoots: (state?.roots ?? []).map((r) => ({ id: r.id, origin: r.origin, notAfter: r.notAfter })),
    trustGeneration: state?.generation ?? 0,
    phase: state?.phase ?? 0,
    ...(state ? { phaseSince: state.since } : {}),
    clusters: Object.fromEntries(
      [...registered].sort().map((name) => {
        const applied = view.records.get(name)?.appliedGeneration ?? 0;
        const phase = state ? phaseOfGeneration(state, applied) : undefined;
        return [name, { appliedGeneration: applied, ...(phase !== undefined ? { phase } : {}) }];
      }),
    ),
    holds: view.holds,
    problems: view.problems,
  };
}
