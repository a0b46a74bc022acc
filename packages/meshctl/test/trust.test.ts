/** The text of `meshctl trust status`, from a fixed answer and a fixed clock (golden). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderTrustStatus } from '../src/commands/trust.ts';
import type { TrustStatusView } from '../src/trust-types.ts';

const NOW = new Date('2026-06-01T12:00:00.000Z');

const STATUS: TrustStatusView = {
  enabled: true,
  policy: { name: 'root', namespace: 'gloo-mesh', mgmtServerCa: 'secretRef' },
  problems: ['RootTrustPolicy gloo-mesh/root: root CA Secret gloo-mesh/r does not exist; the previous root is kept'],
  roots: [
    { id: 'aaaaaaaaaaaaaaaa', origin: 'secretRef', notAfter: '2026-07-01T12:00:00.000Z' },
    { id: 'bbbbbbbbbbbbbbbb', origin: 'secretRef', notAfter: '2027-06-01T12:00:00.000Z' },
  ],
  generation: 3,
  phase: 2,
  since: '2026-06-01T11:00:00.000Z',
  signingRootId: 'bbbbbbbbbbbbbbbb',
  bundleRootIds: ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb'],
  holds: [{ kind: 'old-root-leaves', until: '2026-06-01T15:00:00.000Z' }],
  clusters: [
    {
      cluster: 'east',
      reported: true,
      reportedAt: '2026-06-01T11:59:30.000Z',
      appliedGeneration: 3,
      phase: 2,
      intermediate: { rootId: 'bbbbbbbbbbbbbbbb', notAfter: '2026-06-08T12:00:00.000Z' },
      workloads: 12,
      workloadsNearExpiry: [{ spiffeId: 'spiffe://east.local/ns/shop/sa/web', notAfter: '2026-06-01T12:30:00.000Z' }],
    },
    { cluster: 'west', reported: false, appliedGeneration: 0, workloads: 0, workloadsNearExpiry: [] },
  ],
};

test('given a rotation held by old-root leaves, when trust status is rendered, then it reads as expected', () => {
  assert.equal(
    renderTrustStatus(STATUS, NOW),
    [
      'Mesh trust from RootTrustPolicy gloo-mesh/root (secretRef root).',
      'Phase 2 (intermediates re-signed by the new root), generation 3, since 2026-06-01T11:00:00.000Z (for 60m).',
      'Held: workload certificates issued under the old root, valid for 3h more (until 2026-06-01T15:00:00.000Z).',
      'Problem: RootTrustPolicy gloo-mesh/root: root CA Secret gloo-mesh/r does not exist; the previous root is kept',
      '',
      'ROOT               ORIGIN      EXPIRES                              ROLE',
      'aaaaaaaaaaaaaaaa   secretRef   2026-07-01T12:00:00.000Z (in 30d)    in bundles',
      'bbbbbbbbbbbbbbbb   secretRef   2027-06-01T12:00:00.000Z (in 365d)   signs, in bundles',
      '',
      'CLUSTER   PHASE   APPLIED   INTERMEDIATE ROOT   EXPIRES   WORKLOADS   REPORTED',
      'east      2       3         bbbbbbbbbbbbbbbb    in 7d     12          30s ago',
      'west      -       0         -                   -         0           never',
      '',
      'Workloads near expiry:',
      'CLUSTER   WORKLOAD                             EXPIRES',
      'east      spiffe://east.local/ns/shop/sa/web   in 30m',
      '',
    ].join('\n'),
  );
});

test('given no policy, when trust status is rendered, then it says mesh trust is off', () => {
  const off: TrustStatusView = { enabled: false, problems: [], roots: [], holds: [], clusters: [] };
  assert.equal(renderTrustStatus(off, NOW), 'Mesh trust is off: no RootTrustPolicy is in force.\n');
});
