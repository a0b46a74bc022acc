// The mesh root rotation as a value and the pure rules that move it (DESIGN: mesh trust). No clock,
// no I/O: the caller passes `now` and what the clusters reported, and writes the result.

import { MeshrelayError, isRecord } from '@meshrelay/api';
import { targetFor, type RotationPhase, type TrustTarget } from '@meshrelay/certs';

/** A mesh root the plane knows; its key lives in the mesh root store under `index`. */
export interface MeshRoot {
  readonly index: number;
  readonly id: string;
  readonly certPem: string;
  readonly notAfter: string;
  /** How the root came: made by the plane, or the operator's Secret (secretRef). */
  readonly origin: 'generated' | 'secretRef';
}

/** The plane-wide rotation state, one document every replica reads and writes. */
export interface RotationState {
  /** The old root first; a second root only while a rotation is under way. */
  readonly roots: readonly MeshRoot[];
  readonly phase: RotationPhase;
  /** Increases by one on every phase change; agents report the one they applied. */
  readonly generation: number;
  /** The phase of the generation before this one, so a cluster one step behind has a phase too. */
  readonly previousPhase: RotationPhase;
  /** When the current phase began (ISO). */
  readonly since: string;
}

/** What one cluster last reported over MeshTrust (the parts the rules read). */
export interface ClusterTrustReport {
  readonly cluster: string;
  readonly appliedGeneration: number;
  /** Latest notAfter (ms) of leaves issued under an intermediate of a root other than the signer. */
  readonly oldRootLeafNotAfterMs: number;
  readonly reportedAt: string;
}

/** Why the rotation does not move on now. */
export type RotationHold =
  | { readonly kind: 'cluster'; readonly cluster: string; readonly appliedGeneration: number; readonly since: string }
  | { readonly kind: 'old-root-leaves'; readonly until: string };

export interface RotationStep {
  readonly state: RotationState;
  readonly changed: boolean;
  readonly holds: readonly RotationHold[];
}

/** The first state: one root, steady. */
export function initialRotationState(root: MeshRoot, now: Date): RotationState {
  return { roots: [root], phase: 0, generation: 1, previousPhase: 0, since: now.toISOString() };
}

/** The root the plane's intermediates are signed by at this state's phase. */
export function currentTarget(state: RotationState): TrustTarget {
  const [oldRoot, newRoot] = state.roots;
  return targetFor(state.phase, oldRoot?.id ?? '', newRoot?.id);
}

/** The root of `id` among the state's roots. */
export function rootOf(state: RotationState, id: string): MeshRoot | undefined {
  return state.roots.find((r) => r.id === id);
}

/**
 * Starts a rotation to `next`: phase 1 (the new root joins every bundle). Only from the steady
 * phase, and only to a root that is not the current one; anything else is refused naming why.
 */
export function startRotation(state: RotationState, next: MeshRoot, now: Date): RotationState {
  assertSteady(state);
  const current = state.roots[0];
  if (current?.id === next.id) {
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `root ${next.id} is already the mesh root`);
  }
  return {
    roots: [...(current ? [current] : []), next],
    phase: 1,
    generation: state.generation + 1,
    previousPhase: 0,
    since: now.toISOString(),
  };
}

/** Throws MESHRELAY_ERR_ROTATION_IN_PROGRESS unless the state is steady (phase 0). */
export function assertSteady(state: RotationState): void {
  if (state.phase === 0) return;
  throw new MeshrelayError(
    'MESHRELAY_ERR_ROTATION_IN_PROGRESS',
    `a root rotation is under way (phase ${state.phase}, generation ${state.generation}); it must finish first`,
  );
}

/**
 * One evaluation of the rotation rules. A phase p > 0 moves on only when every registered cluster
 * reported the current generation (so no two clusters are ever more than one phase apart); 2 → 3
 * also waits until every leaf issued under an old-root intermediate has expired. After phase 3 the
 * old root is dropped and the plane is steady again (phase 0) with the new root alone.
 */
export function advanceRotation(
  state: RotationState,
  registered: readonly string[],
  reports: ReadonlyMap<string, ClusterTrustReport>,
  now: Date,
): RotationStep {
  const holds = clusterHolds(state, registered, reports);
  if (state.phase === 0 || holds.length > 0) return { state, changed: false, holds };
  if (state.phase === 2) {
    const leavesUntil = Math.max(0, ...registered.map((c) => reports.get(c)?.oldRootLeafNotAfterMs ?? 0));
    if (now.getTime() <= leavesUntil)
      return {
        state,
        changed: false,
        holds: [{ kind: 'old-root-leaves', until: new Date(leavesUntil).toISOString() }],
      };
  }
  const base = { generation: state.generation + 1, previousPhase: state.phase, since: now.toISOString() };
  const next: RotationState =
    state.phase === 3
      ? { ...base, roots: state.roots.slice(-1), phase: 0 }
      : { ...base, roots: state.roots, phase: (state.phase + 1) as RotationPhase };
  return { state: next, changed: true, holds: [] };
}

function clusterHolds(
  state: RotationState,
  registered: readonly string[],
  reports: ReadonlyMap<string, ClusterTrustReport>,
): RotationHold[] {
  const holds: RotationHold[] = [];
  for (const cluster of [...registered].sort()) {
    const report = reports.get(cluster);
    if (report?.appliedGeneration === state.generation) continue;
    // A cluster that never reported holds the rotation from the start of the phase.
    const since = report && report.reportedAt < state.since ? report.reportedAt : state.since;
    holds.push({ kind: 'cluster', cluster, appliedGeneration: report?.appliedGeneration ?? 0, since });
  }
  return state.phase === 0 ? [] : holds;
}

/** The phase a cluster that applied `generation` is in, when it is the current one or the one before. */
export function phaseOfGeneration(state: RotationState, generation: number): RotationPhase | undefined {
  if (generation === state.generation) return state.phase;
  if (generation === state.generation - 1) return state.previousPhase;
  return undefined;
}

const PHASES = [0, 1, 2, 3];

/** Reads a stored rotation state; throws MESHRELAY_ERR_INTERNAL naming the bad field. */
export function parseRotationState(text: string, source: string): RotationState {
  const bad = (what: string) => new MeshrelayError('MESHRELAY_ERR_INTERNAL', `${source}: ${what}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad('not JSON');
  }
  if (!isRecord(value)) throw bad('not an object');
  const { roots, phase, generation, previousPhase, since } = value;
  if (!Array.isArray(roots) || roots.length < 1 || roots.length > 2) throw bad('roots must hold one or two roots');
  for (const r of roots as unknown[]) {
    if (
      !isRecord(r) ||
      typeof r['id'] !== 'string' ||
      typeof r['certPem'] !== 'string' ||
      !Number.isInteger(r['index'])
    )
      throw bad('each root needs index, id and certPem');
  }
  if (!PHASES.includes(phase as number) || !PHASES.includes(previousPhase as number)) throw bad('phase must be 0..3');
  if (!Number.isInteger(generation) || (generation as number) < 1) throw bad('generation must be a whole number ≥ 1');
  if (typeof since !== 'string') throw bad('since must be a time');
  return value as unknown as RotationState;
}
