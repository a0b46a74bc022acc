// A restarted management server with Redis kept: agents resume their accepted input by hash
// instead of pushing it again (DESIGN §3, §5), and fall back to a full push whenever the server
// cannot honour the resume.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { buildInputSnapshot, type InputSnapshot, type Resource } from '@meshrelay/api';
import { startRedisServer, waitFor, type RedisServerHandle } from '@meshrelay/testkit';
import {
  logged,
  service,
  startClient,
  startRelay,
  startReplica,
  type ClientHarness,
  type RelayUnderTest,
} from './support/relay-harness.ts';

const services = (n: number): Resource[] => Array.from({ length: n }, (_, i) => service(`svc-${i}`));
const input = (generation: number, resources: Resource[]) =>
  buildInputSnapshot({ cluster: 'east', epoch: 'epoch-1', generation, resources });

/** Sum of relay_snapshot_bytes_total for east's pushes of one kind, on one server. */
async function pushBytes(relay: RelayUnderTest, kind: 'full' | 'delta'): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${relay.server.metricsPort}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('relay_snapshot_bytes_total{') &&
        l.includes('cluster="east"') &&
        l.includes('direction="push"') &&
        l.includes(`kind="${kind}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

interface Restart {
  readonly redis: RedisServerHandle;
  readonly first: Awaited<ReturnType<typeof startRelay>>;
  readonly harness: ClientHarness;
  readonly snapshot: InputSnapshot;
}

/** A server with Redis that accepted the agent's snapshot, with the agent connected to it. */
async function accepted(t: TestContext): Promise<Restart> {
  const redis = await startRedisServer();
  t.after(() => redis.stop());
  const first = await startRelay(t, { flags: ['--redis-url', redis.url] });
  // The test stops this server itself (the restart); its own after-hook must not stop it again.
  const stop = first.server.stop.bind(first.server);
  let stopped: Promise<void> | undefined;
  first.server.stop = () => (stopped ??= stop());
  await waitFor(() => first.server.store.health().redisUp, { timeoutMs: 5000, message: 'redis never came up' });
  const harness = await startClient(t, [first]);
  const snapshot = input(2, services(300));
  harness.setLatest(snapshot);
  await waitFor(() => harness.acks.some((a) => a.accepted && a.hash === snapshot.hash), {
    timeoutMs: 10_000,
    message: 'the first server never acked',
  });
  return { redis, first, harness, snapshot };
}

/**
 * Stops the first server (its address refuses connections meanwhile), runs `between`, and starts
 * a new one on the same port and state with empty memory. `reads` counts the new server's
 * getInput calls for east (a read, and a decode, of the stored value) from before any agent
 * reaches it.
 */
async function restart(
  { redis, first }: Restart,
  t: TestContext,
  between: () => Promise<void> = () => Promise.resolve(),
) {
  first.proxy.setDown(true);
  first.proxy.cut();
  await first.server.stop();
  await between();
  const next = await startReplica(t, first, ['--redis-url', redis.url, '--relay-port', String(first.server.relayPort)]);
  const reads = { count: 0 };
  const getInput = next.server.store.getInput.bind(next.server.store);
  next.server.store.getInput = (cluster) => {
    if (cluster === 'east') reads.count++;
    return getInput(cluster);
  };
  await waitFor(() => next.server.store.health().redisUp, {
    timeoutMs: 5000,
    message: 'redis never came up for the new server',
  });
  first.proxy.setDown(false);
  return { next, reads };
}

test('given a server restarted with Redis kept, when the agent reconnects, then its snapshot is acked by hash: none of its resources travel, the stored value is not read, and it is not stored again', async (t) => {
  const run = await accepted(t);
  const acksBefore = run.harness.acks.length;
  const { next, reads } = await restart(run, t);
  await waitFor(() => run.harness.acks.length > acksBefore, {
    timeoutMs: 10_000,
    message: 'the restarted server never acked',
  });
  const ack = run.harness.acks.at(-1);
  assert.deepEqual([ack?.accepted, ack?.hash, ack?.generation], [true, run.snapshot.hash, 2]);
  assert.equal(await pushBytes(next, 'full'), 0, 'the snapshot was not pushed full');
  const resumeBytes = await pushBytes(next, 'delta');
  assert.ok(
    resumeBytes > 0 && resumeBytes < 1024,
    `the resume took ${resumeBytes} bytes (the snapshot is ${run.snapshot.bytes})`,
  );
  assert.equal(reads.count, 0, 'the server did not read the stored input to answer');
  assert.equal(next.stored.length, 0, 'the held input was not written again');
  assert.equal(logged(run.harness.lines, /does not hold the delta base/), false);
});

test('given a server restarted with Redis flushed, when the agent resumes, then the server refuses the resume, the agent pushes full, and the server ends with its input', async (t) => {
  const run = await accepted(t);
  const { next } = await restart(run, t, () => run.redis.restart());
  await waitFor(() => next.stored.at(-1)?.hash === run.snapshot.hash, {
    timeoutMs: 10_000,
    message: 'the restarted server never stored the input',
  });
  assert.ok(logged(run.harness.lines, /does not hold the delta base/), 'the resume was refused first');
  assert.ok((await pushBytes(next, 'full')) > 0, 'the snapshot went full');
  assert.equal((await next.server.store.getInput('east'))?.hash, run.snapshot.hash);
  assert.equal(run.harness.acks.at(-1)?.accepted, true);
});
