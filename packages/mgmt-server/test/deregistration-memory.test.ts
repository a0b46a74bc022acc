// Deregistration leaves nothing behind: no per-cluster map entry, no metric series.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildOutputSnapshot } from '@meshrelay/api';
import { startRedisServer, waitFor } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPull,
  openPush,
  pushSnapshot,
  registerCluster,
  service,
  startTestServer,
  virtualDestination,
} from './harness.ts';

const CYCLES = 4;

test('given clusters that pushed, pulled and were refused, when each is deregistered, then no map or metric series keeps their names', async (t) => {
  const redis = await startRedisServer();
  t.after(() => redis.stop());
  const server = await startTestServer(t, ['--redis-url', redis.url]);
  await waitFor(() => server.store.health().redisUp, { timeoutMs: 5000, message: 'redis never came up' });
  const names = Array.from({ length: CYCLES }, (_, i) => `churn-${i}`);

  for (const name of names) {
    const id = await registerCluster(server, name);
    const client = mtlsClient(t, server, id);
    const push = openPush(client);
    pushSnapshot(push, name, 5, [service(`svc-${name}`), virtualDestination(`svc-${name}`)]);
    await next(push, (m) => m.ack ?? undefined);
    const pull = openPull(client);
    pull.write({ hello: { heldHash: '' } });
    const header = await next(pull, (m) => m.header ?? undefined);
    pull.write({ ack: { hash: header.hash, accepted: true } });
    const stale = openPush(client);
    pushSnapshot(stale, name, 3, [service('older')]);
    await waitFor(
      async () =>
        (await metricsText(server.metricsPort)).includes(`meshrelay_input_snapshots_rejected_total{cluster="${name}"`),
      {
        timeoutMs: 5000,
        message: `the stale push of ${name} was never counted`,
      },
    );
    assert.ok((await metricsText(server.metricsPort)).includes(`relay_output_pushes_total{cluster="${name}"`));

    await server.registry.deregister(name);
    await waitFor(() => server.debugCounts()['streams'] === 0, {
      timeoutMs: 5000,
      message: `the streams of ${name} stayed open`,
    });
  }
  await server.loop.runNow();

  await waitFor(() => Object.values(server.debugCounts()).every((n) => n === 0), {
    timeoutMs: 10_000,
    message: `per-cluster state left: ${JSON.stringify(server.debugCounts())}`,
  });
  const text = await metricsText(server.metricsPort);
  for (const name of names) assert.ok(!text.includes(`"${name}"`), `a metric series still names ${name}`);
});

test('given an output a translation under way publishes after its cluster was deregistered, when the next translation finishes, then neither memory nor Redis keeps it', async (t) => {
  const redis = await startRedisServer();
  t.after(() => redis.stop());
  const server = await startTestServer(t, ['--redis-url', redis.url]);
  await waitFor(() => server.store.health().redisUp, { timeoutMs: 5000, message: 'redis never came up' });
  await registerCluster(server, 'late');
  await server.registry.deregister('late');
  // What the loop does with an output it built from the registry as it was before the deregistration.
  const late = buildOutputSnapshot({ cluster: 'late', resources: [service('svc-late')], provenance: [] });
  server.outputs.publish(late);
  assert.equal(await server.store.putOutput(late), true);

  await server.loop.runNow();
  await waitFor(
    async () => server.debugCounts()['outputHub'] === 0 && (await server.store.getOutput('late')) === undefined,
    {
      timeoutMs: 5000,
      message: `the late output stayed: ${JSON.stringify(server.debugCounts())}`,
    },
  );
  await waitFor(() => Object.values(server.debugCounts()).every((n) => n === 0), {
    timeoutMs: 5000,
    message: `per-cluster state left: ${JSON.stringify(server.debugCounts())}`,
  });
});

async function metricsText(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}
