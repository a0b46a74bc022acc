// Resume by hash (DESIGN §3): an empty delta against itself names a snapshot the agent still
// holds. A server whose store holds exactly that input (epoch, generation, hash) acks it without
// the snapshot; anything else is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH, never guessed.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import {
  buildInputSnapshot,
  deltaInput,
  encodeSnapshotFramesSync,
  sha256Hex,
  snapshotEncoding,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { startRedisServer, waitFor } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPush,
  registerCluster,
  service,
  startTestServer,
  type PushStream,
  type TestServer,
} from './harness.ts';

const services = (n: number, extra: string[] = []): Resource[] => [
  ...Array.from({ length: n }, (_, i) => service(`s${i}`)),
  ...extra.map((x) => service(x)),
];
const snap = (generation: number, resources: Resource[], epoch = 'epoch-1') =>
  buildInputSnapshot({ cluster: 'a', epoch, generation, resources });

function write(stream: PushStream, frames: ReturnType<typeof encodeSnapshotFramesSync>): void {
  stream.write({ header: frames.header });
  for (const chunk of frames.chunks) stream.write({ chunk });
}

function pushFull(stream: PushStream, s: InputSnapshot): void {
  write(stream, encodeSnapshotFramesSync({ ...s, encoding: snapshotEncoding(s) }));
}

/** The resume an agent sends: `s` as an empty delta against itself. */
function pushResume(stream: PushStream, s: Pick<InputSnapshot, 'epoch' | 'generation' | 'hash'>): void {
  write(
    stream,
    encodeSnapshotFramesSync({
      epoch: s.epoch,
      generation: s.generation,
      hash: s.hash,
      encoding: '[]',
      delta: { baseHash: s.hash, payloadHash: sha256Hex('[]'), deletedKeys: [] },
    }),
  );
}

async function ack(stream: PushStream) {
  return next(stream, (m) => m.ack ?? undefined);
}

/**
 * A server sharing `redisUrl`, started now (nothing in its memory), with cluster "a" registered and one push stream
 * open.
 */
async function serverWithStream(
  t: TestContext,
  redisUrl: string,
): Promise<{ server: TestServer; stream: PushStream; reopen: () => PushStream }> {
  const server = await startTestServer(t, ['--redis-url', redisUrl]);
  await waitFor(() => server.store.health().redisUp, { timeoutMs: 5000, message: 'redis never came up' });
  const id = await registerCluster(server, 'a');
  const reopen = (): PushStream => {
    const stream = openPush(mtlsClient(t, server, id));
    t.after(() => stream.cancel());
    return stream;
  };
  return { server, stream: reopen(), reopen };
}

/** One server took `held` through an old-style full push; Redis keeps it. */
async function heldInRedis(t: TestContext, held: InputSnapshot): Promise<string> {
  const redis = await startRedisServer();
  t.after(() => redis.stop());
  const { stream } = await serverWithStream(t, redis.url);
  pushFull(stream, held);
  assert.equal((await ack(stream)).accepted, true);
  return redis.url;
}

test('given a resume acked by a restarted server, when the next change arrives as a delta on that stream, then it applies to the held input read from the store', async (t) => {
  const first = snap(2, services(50));
  const { server, stream } = await serverWithStream(t, await heldInRedis(t, first));
  pushResume(stream, first);
  const resumed = await ack(stream);
  assert.deepEqual([resumed.accepted, resumed.acceptsDeltas], [true, true]);

  const second = snap(3, services(50, ['new']));
  const input = await deltaInput(first, second, second.bytes);
  assert.ok(input?.delta, 'the change is framed as a delta');
  write(stream, encodeSnapshotFramesSync(input));
  const applied = await ack(stream);
  assert.deepEqual([applied.accepted, applied.hash], [true, second.hash]);
  const stored = await server.store.getInput('a');
  assert.equal(stored && snapshotEncoding(stored), snapshotEncoding(second));
});

test('given Redis holding generation 3, when resumes name generation 2, another epoch or another hash, then each is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH and the held input stays; the exact one is acked', async (t) => {
  const held = snap(3, services(20));
  const { server, stream } = await serverWithStream(t, await heldInRedis(t, held));
  const claims = [
    { ...held, generation: 2 },
    { ...held, epoch: 'epoch-0' },
    { ...held, hash: snap(3, services(21)).hash },
  ];
  for (const claim of claims) {
    pushResume(stream, claim);
    const refused = await ack(stream);
    assert.deepEqual(
      [refused.accepted, refused.errorCode],
      [false, 'MESHRELAY_ERR_DELTA_BASE_MISMATCH'],
      JSON.stringify({ ...claim, resources: undefined }),
    );
  }
  assert.equal((await server.store.getInput('a'))?.hash, held.hash);
  pushResume(stream, held);
  assert.deepEqual([(await ack(stream)).accepted], [true]);
});

test('given an old-style agent that pushes full to a restarted server, when it later resumes on a new stream, then both are acked and the held input is never rewritten', async (t) => {
  const held = snap(4, services(20));
  const redisUrl = await heldInRedis(t, held);
  const { server, stream, reopen } = await serverWithStream(t, redisUrl);
  const puts: string[] = [];
  const putInput = server.store.putInput.bind(server.store);
  server.store.putInput = (s) => {
    puts.push(s.hash);
    return putInput(s);
  };
  pushFull(stream, held);
  assert.equal((await ack(stream)).accepted, true, 'a full push of the held input is acked');
  stream.cancel();
  const again = reopen();
  pushResume(again, held);
  const resumed = await ack(again);
  assert.deepEqual([resumed.accepted, resumed.hash, Number(resumed.generation)], [true, held.hash, 4]);
  assert.deepEqual(puts, []);
});
