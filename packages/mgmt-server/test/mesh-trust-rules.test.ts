/**
 * The mesh root rotation rules, pure: phases move on only when every registered cluster applied
 * the current generation, 2 → 3 waits for old-root leaves to expire, a silent cluster holds the
 * rotation (and says since when), and no two clusters are ever two phases apart.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  advanceRotation,
  currentTarget,
  initialRotationState,
  phaseOfGeneration,
  startRotation,
  type ClusterTrustReport,
  type MeshRoot,
  type RotationState,
} from '../src/mesh-trust/rotation-state.ts';

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const root = (index: number, id: string): MeshRoot => ({
  index,
  id,
  certPem: `pem-${id}`,
  notAfter: '2027-01-01T00:00:00.000Z',
  origin: 'generated',
});
const OLD = root(1, 'aaaaaaaaaaaaaaaa');
const NEW = root(2, 'bbbbbbbbbbbbbbbb');
const CLUSTERS = ['east', 'west'];

function reports(state: RotationState, applied: Record<string, number>, leavesUntilMs = 0) {
  return new Map<string, ClusterTrustReport>(
    Object.entries(applied).map(([cluster, generation]) => [
      cluster,
      { cluster, appliedGeneration: generation, oldRootLeafNotAfterMs: leavesUntilMs, reportedAt: state.since },
    ]),
  );
}

function rotating(): RotationState {
  return startRotation(initialRotationState(OLD, T0), NEW, at(1));
}

test('given a steady plane, when a rotation starts, then phase 1 puts both roots in bundles and the old root still signs', () => {
  const state = rotating();
  assert.equal(state.phase, 1);
  assert.equal(state.generation, 2);
  assert.deepEqual(currentTarget(state), { bundleRootIds: [OLD.id, NEW.id], signingRootId: OLD.id });
  assert.throws(() => startRotation(state, root(3, 'cccccccccccccccc'), at(2)), {
    code: 'MESHRELAY_ERR_ROTATION_IN_PROGRESS',
  });
});

test('given phase 1, when one cluster has not applied it, then the rotation holds and names that cluster', () => {
  const state = rotating();
  const step = advanceRotation(state, CLUSTERS, reports(state, { east: 2, west: 1 }), at(10));
  assert.equal(step.changed, false);
  assert.deepEqual(step.holds, [{ kind: 'cluster', cluster: 'west', appliedGeneration: 1, since: state.since }]);
});

test('given a registered cluster that never reported, then it holds the rotation from the start of the phase', () => {
  const state = rotating();
  const step = advanceRotation(state, [...CLUSTERS, 'silent'], reports(state, { east: 2, west: 2 }), at(10));
  assert.equal(step.changed, false);
  assert.deepEqual(step.holds, [{ kind: 'cluster', cluster: 'silent', appliedGeneration: 0, since: state.since }]);
});

test('given every cluster applied phase 1, then phase 2 begins: the new root signs, both stay in bundles', () => {
  const state = rotating();
  const step = advanceRotation(state, CLUSTERS, reports(state, { east: 2, west: 2 }), at(10));
  assert.equal(step.changed, true);
  assert.equal(step.state.phase, 2);
  assert.equal(step.state.generation, 3);
  assert.equal(step.state.since, at(10).toISOString());
  assert.deepEqual(currentTarget(step.state), { bundleRootIds: [OLD.id, NEW.id], signingRootId: NEW.id });
});

test('given phase 2 applied everywhere, when old-root leaves are still valid, then 2 → 3 waits until they expired', () => {
  const two = advanceRotation(rotating(), CLUSTERS, reports(rotating(), { east: 2, west: 2 }), at(10)).state;
  const leavesUntil = at(100).getTime();
  const applied = reports(two, { east: 3, west: 3 }, leavesUntil);
  const early = advanceRotation(two, CLUSTERS, applied, at(100));
  assert.equal(early.changed, false);
  assert.deepEqual(early.holds, [{ kind: 'old-root-leaves', until: at(100).toISOString() }]);
  const later = advanceRotation(two, CLUSTERS, applied, at(101));
  assert.equal(later.state.phase, 3);
  assert.deepEqual(currentTarget(later.state), { bundleRootIds: [NEW.id], signingRootId: NEW.id });
});

test('given phase 3 applied everywhere, then the plane is steady on the new root alone', () => {
  let state = rotating();
  for (const generation of [2, 3, 4]) {
    state = advanceRotation(state, CLUSTERS, reports(state, { east: generation, west: generation }), at(1000)).state;
  }
  assert.equal(state.phase, 0);
  assert.equal(state.generation, 5);
  assert.deepEqual(
    state.roots.map((r) => r.id),
    [NEW.id],
  );
  assert.deepEqual(currentTarget(state), { bundleRootIds: [NEW.id], signingRootId: NEW.id });
  assert.deepEqual(advanceRotation(state, CLUSTERS, new Map(), at(2000)).holds, [], 'a steady plane holds nothing');
});

test('given any mix of reports, then the phases clusters are in are never two apart', () => {
  let state = rotating();
  const applied: Record<string, number> = { east: 1, west: 1 };
  // East applies every generation at once; west only every third evaluation.
  for (let i = 0; i < 30; i++) {
    applied['east'] = state.generation;
    if (i % 3 === 0) applied['west'] = state.generation;
    state = advanceRotation(state, CLUSTERS, reports(state, applied), at(1000 + i)).state;
    const phases = CLUSTERS.map((c) => phaseOfGeneration(state, applied[c] ?? 0));
    assert.ok(
      phases.every((p) => p !== undefined),
      `every cluster is at the current generation or the one before (generation ${state.generation}, applied ${JSON.stringify(applied)})`,
    );
  }
  assert.equal(state.phase, 0, 'the rotation finished');
});
