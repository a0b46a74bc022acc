import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubernetesCluster } from '@meshrelay/api';
import { decideGate, requiredClusters, type GateConfig } from '../src/safe-mode-gate.ts';

function cluster(name: string, opts: { warm?: boolean; skipWarming?: boolean } = {}): KubernetesCluster {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'KubernetesCluster',
    metadata: { name, namespace: 'gloo-mesh', uid: `uid-${name}`, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { skipWarming: opts.skipWarming ?? false },
    status: {
      conditions: [
        opts.warm
          ? {
              type: 'ClusterWarm',
              status: 'True',
              reason: 'FirstSnapshotReceived',
              message: '',
              lastTransitionTime: '2026-01-01T00:00:00Z',
            }
          : {
              type: 'ClusterWarm',
              status: 'False',
              reason: 'ClusterRegistered',
              message: '',
              lastTransitionTime: '2026-01-01T00:00:00Z',
            },
      ],
    },
  };
}

const SAFE: GateConfig = { safeMode: true, safeStartWindowSeconds: 180 };
const WINDOW: GateConfig = { safeMode: false, safeStartWindowSeconds: 60 };
const NO_WAIT: GateConfig = { safeMode: false, safeStartWindowSeconds: 0 };
const warmAB = [cluster('a', { warm: true }), cluster('b', { warm: true })];

const cases: {
  name: string;
  config: GateConfig;
  clusters: KubernetesCluster[];
  present: string[];
  elapsed: number;
  openedBefore?: boolean;
  want: {
    state: 'open' | 'held';
    missing: string[];
    admitted?: string[];
    reason?: string;
    mode?: string;
    remaining?: number;
  };
}[] = [
  {
    name: 'safe mode, all warm present',
    config: SAFE,
    clusters: warmAB,
    present: ['a', 'b'],
    elapsed: 0,
    want: { state: 'open', missing: [], admitted: ['a', 'b'], reason: 'all-required-present' },
  },
  {
    name: 'safe mode, one warm missing holds forever',
    config: SAFE,
    clusters: warmAB,
    present: ['a'],
    elapsed: 1e9,
    want: { state: 'held', missing: ['b'], mode: 'safe-mode' },
  },
  {
    name: 'safe mode, missing cluster set skipWarming',
    config: SAFE,
    clusters: [cluster('a', { warm: true }), cluster('b', { warm: true, skipWarming: true })],
    present: ['a'],
    elapsed: 0,
    want: { state: 'open', missing: [], admitted: ['a'] },
  },
  {
    name: 'safe mode, missing cluster never warm',
    config: SAFE,
    clusters: [cluster('a', { warm: true }), cluster('b')],
    present: ['a'],
    elapsed: 0,
    want: { state: 'open', missing: [], admitted: ['a'] },
  },
  {
    name: 'safe mode, missing cluster deregistered',
    config: SAFE,
    clusters: [cluster('a', { warm: true })],
    present: ['a', 'b'],
    elapsed: 0,
    want: { state: 'open', missing: [], admitted: ['a'] },
  },
  {
    name: 'window, missing, within window',
    config: WINDOW,
    clusters: warmAB,
    present: ['a'],
    elapsed: 10,
    want: { state: 'held', missing: ['b'], mode: 'safe-start-window', remaining: 50 },
  },
  {
    name: 'window, missing, window elapsed',
    config: WINDOW,
    clusters: warmAB,
    present: ['a'],
    elapsed: 60,
    want: { state: 'open', missing: ['b'], admitted: ['a'], reason: 'window-elapsed' },
  },
  {
    name: 'window 0 never waits',
    config: NO_WAIT,
    clusters: warmAB,
    present: [],
    elapsed: 0,
    want: { state: 'open', missing: ['a', 'b'], admitted: [], reason: 'no-wait' },
  },
  {
    name: 'once open, a later absence does not close the gate',
    config: SAFE,
    clusters: warmAB,
    present: ['a'],
    elapsed: 5,
    openedBefore: true,
    want: { state: 'open', missing: ['b'], admitted: ['a'], reason: 'already-open' },
  },
  {
    name: 'safe mode ignores the window',
    config: { safeMode: true, safeStartWindowSeconds: 1 },
    clusters: warmAB,
    present: [],
    elapsed: 100,
    want: { state: 'held', missing: ['a', 'b'], mode: 'safe-mode' },
  },
];

for (const c of cases) {
  test(`gate: ${c.name}`, () => {
    const d = decideGate(c.config, {
      clusters: c.clusters,
      present: new Set(c.present),
      elapsedSeconds: c.elapsed,
      openedBefore: c.openedBefore ?? false,
    });
    assert.equal(d.state, c.want.state);
    assert.deepEqual(d.missing, c.want.missing);
    if (d.state === 'open') {
      assert.deepEqual(d.admitted, c.want.admitted);
      if (c.want.reason) assert.equal(d.reason, c.want.reason);
    } else {
      assert.equal(d.mode, c.want.mode);
      if (c.want.remaining !== undefined) assert.equal(d.windowRemainingSeconds, c.want.remaining);
    }
  });
}

test('required clusters are the warm ones without skipWarming, sorted', () => {
  assert.deepEqual(
    requiredClusters([
      cluster('c', { warm: true }),
      cluster('a', { warm: true }),
      cluster('b'),
      cluster('d', { warm: true, skipWarming: true }),
    ]),
    ['a', 'c'],
  );
});
