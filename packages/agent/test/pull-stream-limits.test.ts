// An agent's pull stream taking in output deltas from a server it cannot trust: patches that
// would cost far more than their size (issue 30, rows 1–4, from the server's side) are refused
// naming the limit, the output held stays, and the agent's heartbeats keep their timing.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { Client, credentials } from '@grpc/grpc-js';
import { pino } from 'pino';
import {
  buildOutputSnapshot,
  encodeSnapshotFramesSync,
  resourceId,
  sha256Hex,
  type AssembledSnapshot,
  type OutputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { startRelayPullDouble, waitFor, type RelayPullDouble } from '@meshrelay/testkit';
import { PullStream } from '../src/relay/pull-stream.ts';

const HEARTBEAT_MS = 50;
/** Ten heartbeat intervals without one means the agent's event loop was held up. */
const MAX_GAP_MS = 10 * HEARTBEAT_MS;

function service(name: string, extra: Record<string, unknown> = {}): Resource {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }], ...extra },
  };
}

/** An agent's pull stream holding `held`, connected to a server double. */
async function pulling(
  t: TestContext,
  held: OutputSnapshot,
): Promise<{ double: RelayPullDouble; applied: AssembledSnapshot[] }> {
  const double = await startRelayPullDouble(t);
  const client = new Client(double.address, credentials.createInsecure());
  const applied: AssembledSnapshot[] = [];
  const stream = new PullStream({
    client,
    held: () => held,
    apply: (output) => {
      applied.push(output);
      return Promise.resolve();
    },
    limits: { maxBytes: 64 * 1024 * 1024, maxResources: 100_000 },
    heartbeatIntervalMs: HEARTBEAT_MS,
    heartbeatTimeoutMs: 10_000,
    logger: pino({ level: 'silent' }),
    onOpen: () => undefined,
    onEnd: () => undefined,
  });
  t.after(() => {
    stream.close();
    client.close();
  });
  await double.connected();
  return { double, applied };
}

for (const [row, extra, ops, limit] of [
  [
    '1: 22 copies of a 12 MiB array',
    { items: Array.from({ length: 21_845 }, (_, i) => ({ name: `item-${i}`, note: 'x'.repeat(530) })) },
    Array.from({ length: 22 }, (_, i) => ({ op: 'copy', from: '/spec/items', path: `/spec/c${i}` })),
    /snapshot byte limit/,
  ],
  [
    '3: 3,000 moves in a 5,000-item array',
    { items: Array.from({ length: 5000 }, (_, i) => ({ name: `item-${i}`, note: 'x'.repeat(170) })) },
    Array.from({ length: 3000 }, () => ({ op: 'move', from: '/spec/items/0', path: '/spec/items/4999' })),
    /2048 patch operations per resource/,
  ],
  [
    '4: a value 3,000 levels deep',
    {},
    [{ op: 'add', path: '/spec/deep', value: JSON.parse(`${'{"n":'.repeat(2998)}{}${'}'.repeat(2998)}`) as unknown }],
    /nested deeper than 100 levels/,
  ],
] as const) {
  test(
    `given an agent holding an output, when a server sends a delta patching it with ${row.slice(3)} (row ${row[0]}), then the agent refuses it with MESHRELAY_ERR_DELTA_LIMIT, keeps its output, and its heartbeats keep their timing`,
    { timeout: 120_000 },
    async (t) => {
      const big = service('big', extra);
      const held = buildOutputSnapshot({ cluster: 'a', resources: [big, service('small')], provenance: [] });
      const { double, applied } = await pulling(t, held);
      const payload = '[]';
      const frames = encodeSnapshotFramesSync({
        hash: 'f'.repeat(64),
        encoding: payload,
        delta: {
          baseHash: held.hash,
          payloadHash: sha256Hex(payload),
          deletedKeys: [],
          patches: [{ key: resourceId(big), ops: JSON.stringify(ops) }],
        },
      });
      double.resetHeartbeats();
      double.send(frames);
      await waitFor(() => double.acks.length > 0, { timeoutMs: 100_000, message: 'the agent never acked the delta' });
      // A refusal quicker than a heartbeat interval is measured up to the next heartbeat.
      await waitFor(() => double.heartbeatWindow().count > 0, {
        timeoutMs: 10_000,
        message: 'no heartbeat from the agent',
      });
      const beat = double.heartbeatWindow();
      const ack = double.acks[0];
      t.diagnostic(`ack ${ack?.errorCode}: ${ack?.message}; longest heartbeat gap ${Math.round(beat.maxGapMs)} ms`);
      assert.deepEqual([ack?.accepted, ack?.errorCode], [false, 'MESHRELAY_ERR_DELTA_LIMIT']);
      assert.match(ack?.message ?? '', limit);
      assert.ok((ack?.message ?? '').includes(resourceId(big)), 'the refusal names the resource');
      assert.equal(applied.length, 0, 'nothing was applied: the output held stays');
      assert.ok(beat.maxGapMs < MAX_GAP_MS, `the agent's heartbeats paused up to ${Math.round(beat.maxGapMs)} ms`);
    },
  );
}
