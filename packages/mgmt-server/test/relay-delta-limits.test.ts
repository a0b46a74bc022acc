// Deltas whose RFC 6902 patches would cost far more than their size (issue 30, rows 1–4): each is
// refused naming the limit it passes, before the value is built, while a second cluster's stream
// keeps its heartbeats; the previous input stays and the stream goes on taking honest snapshots.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import {
  buildInputSnapshot,
  deltaInput,
  encodeSnapshotFramesSync,
  resourceId,
  sha256Hex,
  snapshotEncoding,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { startHeartbeatProbe, waitFor, type ResponsivenessProbe } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPush,
  registerCluster,
  relayTarget,
  service,
  startTestServer,
  type PushStream,
  type TestServer,
} from './harness.ts';

/** Heartbeats every 100 ms: a gap of ten intervals means the server's event loop was held up. */
const HEARTBEAT_MS = 100;
const MAX_GAP_MS = 10 * HEARTBEAT_MS;

const snap = (generation: number, resources: Resource[]) =>
  buildInputSnapshot({ cluster: 'a', epoch: 'epoch-1', generation, resources });

interface Pushing {
  readonly server: TestServer;
  readonly stream: PushStream;
  readonly base: InputSnapshot;
  readonly heartbeats: ResponsivenessProbe;
}

/**
 * A server holding `resources` as cluster a's input (pushed full), and a second cluster's stream counting heartbeats.
 */
async function pushing(t: TestContext, resources: Resource[]): Promise<Pushing> {
  const server = await startTestServer(t, [
    '--heartbeat-interval',
    `${HEARTBEAT_MS}ms`,
    '--heartbeat-timeout',
    '10s',
    '--translation-debounce',
    '10m',
  ]);
  const stream = openPush(mtlsClient(t, server, await registerCluster(server, 'a')));
  t.after(() => stream.cancel());
  const base = snap(1, resources);
  send(stream, encodeSnapshotFramesSync({ ...base, encoding: snapshotEncoding(base) }));
  const ack = await next(stream, (m) => m.ack ?? undefined, 60_000);
  assert.deepEqual([ack.accepted, ack.hash], [true, base.hash], 'the base is taken');
  assert.equal((await server.store.getInput('a'))?.hash, base.hash, 'the base is stored as sent');
  const { token } = await server.registry.register('probe', {});
  const heartbeats = await startHeartbeatProbe(t, {
    address: relayTarget(server),
    caPem: server.ca.certPem,
    token,
    cluster: 'probe',
  });
  return { server, stream, base, heartbeats };
}

function send(stream: PushStream, frames: ReturnType<typeof encodeSnapshotFramesSync>): void {
  stream.write({ header: frames.header });
  for (const chunk of frames.chunks) stream.write({ chunk });
}

/** Sends a delta of generation 2 against `base` that patches `key` with `ops` and announces `hash` as its result. */
function sendPatch(
  stream: PushStream,
  base: InputSnapshot,
  key: string,
  ops: readonly object[],
  hash = 'f'.repeat(64),
): void {
  const payload = '[]';
  send(
    stream,
    encodeSnapshotFramesSync({
      epoch: 'epoch-1',
      generation: 2,
      hash,
      encoding: payload,
      delta: {
        baseHash: base.hash,
        payloadHash: sha256Hex(payload),
        deletedKeys: [],
        patches: [{ key, ops: JSON.stringify(ops) }],
      },
    }),
  );
}

/**
 * Sends the patch and waits for its ack while the probe watches; asserts it was refused with
 * MESHRELAY_ERR_DELTA_LIMIT naming `limit` and the resource, that the other cluster's heartbeats
 * kept coming, that the input held is still the base, and that the stream still takes an honest
 * delta against that base.
 */
async function assertRefused(
  t: TestContext,
  p: Pushing,
  key: string,
  ops: readonly object[],
  limit: RegExp,
  hash?: string,
): Promise<void> {
  p.heartbeats.reset();
  sendPatch(p.stream, p.base, key, ops, hash);
  const nack = await next(p.stream, (m) => m.ack ?? undefined, 170_000);
  // A refusal quicker than a heartbeat interval is measured up to the next heartbeat.
  await waitFor(() => p.heartbeats.window().count > 0, {
    timeoutMs: 10_000,
    message: 'no heartbeat reached the other cluster',
  });
  const beat = p.heartbeats.window();
  t.diagnostic(
    `refused with ${nack.errorCode}: ${nack.message}; longest heartbeat gap ${Math.round(beat.maxGapMs)} ms (${beat.count} heartbeats)`,
  );
  assert.equal(nack.accepted, false);
  assert.equal(nack.errorCode, 'MESHRELAY_ERR_DELTA_LIMIT');
  assert.match(nack.message ?? '', limit);
  assert.ok((nack.message ?? '').includes(key), `the refusal names the resource: ${nack.message}`);
  assert.ok(
    beat.count > 0 && beat.maxGapMs < MAX_GAP_MS,
    `the other cluster's heartbeats paused up to ${Math.round(beat.maxGapMs)} ms (${beat.count} arrived)`,
  );
  assert.equal((await p.server.store.getInput('a'))?.hash, p.base.hash, 'the previous input stays');
  const honest = snap(3, [
    ...p.base.resources.filter((r) => r.metadata.name !== 'small'),
    service('small', { ports: [{ name: 'http', port: 9090, protocol: 'TCP' }] }),
  ]);
  const input = await deltaInput(p.base, honest, honest.bytes, undefined, true);
  assert.ok(input);
  assert.equal(input.delta?.patches?.length, 1, 'the honest change goes as a patch');
  send(p.stream, encodeSnapshotFramesSync({ ...input, epoch: 'epoch-1', generation: 3 }));
  const ack = await next(p.stream, (m) => m.ack ?? undefined, 60_000);
  assert.deepEqual(
    [ack.accepted, ack.hash],
    [true, honest.hash],
    'an honest delta against the same base is taken next',
  );
}

/** `items` items of about `itemBytes` bytes each. */
function items(count: number, itemBytes: number): { name: string; note: string }[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `item-${i}`,
    note: 'x'.repeat(Math.max(0, itemBytes - 30)),
  }));
}

/** A value nested `levels` deep: {"n":{"n":...{}}}. */
function nested(levels: number): object {
  let value: object = {};
  for (let i = 1; i < levels; i++) value = { n: value };
  return value;
}

test(
  'given an input holding a 21,845-item array (12 MiB), when a delta of 22 copy operations of it arrives (row 1), then it is refused at the snapshot byte limit before the copies are built, and heartbeats keep their timing',
  { timeout: 180_000 },
  async (t) => {
    const big = service('big', { items: items(21_845, 560) });
    const p = await pushing(t, [big, service('small')]);
    const ops = Array.from({ length: 22 }, (_, i) => ({
      op: 'copy',
      from: '/spec/items',
      path: `/spec/c${String(i).padStart(2, '0')}`,
    }));
    assert.ok(JSON.stringify(ops).length < 1200, 'about 1 KB of operations');
    await assertRefused(t, p, resourceId(big), ops, /snapshot byte limit/);
  },
);

test(
  'given an input holding a 1 MiB value, when a delta appends 64 copies of it to an array (row 2), then it is refused at the snapshot byte limit, and heartbeats keep their timing',
  { timeout: 180_000 },
  async (t) => {
    const big = service('big', { blob: 'b'.repeat(1024 * 1024), arr: [] });
    const p = await pushing(t, [big, service('small')]);
    const ops = Array.from({ length: 64 }, () => ({ op: 'copy', from: '/spec/blob', path: '/spec/arr/-' }));
    await assertRefused(t, p, resourceId(big), ops, /snapshot byte limit/);
  },
);

for (const [moves, limit] of [
  [3000, /2048 patch operations per resource/],
  [1500, /patch work limit/],
] as const) {
  test(
    `given an input holding a 5,000-item array, when a delta of ${moves} move operations between two of its positions arrives (row 3), then it is refused at the ${moves > 2048 ? 'operations-per-resource' : 'work'} limit, and heartbeats keep their timing`,
    { timeout: 180_000 },
    async (t) => {
      const big = service('big', { items: items(5000, 200) });
      const p = await pushing(t, [big, service('small')]);
      const ops = Array.from({ length: moves }, () => ({
        op: 'move',
        from: '/spec/items/0',
        path: '/spec/items/4999',
      }));
      await assertRefused(t, p, resourceId(big), ops, limit);
    },
  );
}

for (const levels of [150, 2000, 3000]) {
  test(
    `given an input, when a delta adds a value ${levels} levels deep (row 4), then it is refused at the depth limit a full snapshot has (100), not taken or failed as an internal error`,
    { timeout: 180_000 },
    async (t) => {
      const small = service('small');
      const p = await pushing(t, [service('big'), small]);
      // The hash of the result as the sender would announce it, where it can be computed, so the depth alone is what
      // refuses it.
      let hash: string | undefined;
      try {
        hash = snap(2, [
          service('big'),
          { ...small, spec: { ...(small.spec as object), deep: nested(levels - 2) } },
        ]).hash;
      } catch {
        hash = undefined;
      }
      await assertRefused(
        t,
        p,
        resourceId(small),
        [{ op: 'add', path: '/spec/deep', value: nested(levels - 2) }],
        /nested deeper than 100 levels/,
        hash,
      );
    },
  );
}

test(
  'given an input, when a delta patches a resource into one a full snapshot would have refused, then the patched resource is refused the same way (the ack warns, its neighbours stay)',
  { timeout: 60_000 },
  async (t) => {
    const small = service('small');
    const p = await pushing(t, [service('big'), small]);
    const bad = {
      ...small,
      spec: { ...(small.spec as object), ports: [{ name: 'http', port: 'not-a-port', protocol: 'TCP' }] },
    } as Resource;
    const result = snap(2, [service('big'), bad]);
    sendPatch(
      p.stream,
      p.base,
      resourceId(small),
      [{ op: 'replace', path: '/spec/ports/0/port', value: 'not-a-port' }],
      result.hash,
    );
    const ack = await next(p.stream, (m) => m.ack ?? undefined, 60_000);
    assert.equal(ack.accepted, true);
    assert.equal(ack.warnings?.length, 1);
    assert.match(ack.warnings?.[0] ?? '', /small.*port/);
    assert.deepEqual(
      (await p.server.store.getInput('a'))?.resources.map((r) => r.metadata.name),
      ['big'],
    );
    // The same content sent full is judged alike.
    send(
      p.stream,
      encodeSnapshotFramesSync({
        ...snap(3, [service('big'), bad]),
        encoding: snapshotEncoding(snap(3, [service('big'), bad])),
      }),
    );
    const full = await next(p.stream, (m) => m.ack ?? undefined, 60_000);
    assert.deepEqual([full.accepted, full.warnings], [true, ack.warnings]);
  },
);
