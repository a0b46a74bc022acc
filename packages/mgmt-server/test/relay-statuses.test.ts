import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { relay } from '@meshrelay/api';
import { statusFixture, waitFor } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPull,
  openPush,
  pushSnapshot,
  registerCluster,
  service,
  startTestServer,
  type TestServer,
} from './harness.ts';

/** Connects `cluster` as its agent does: pushes `resources`, opens a pull stream; returns the pull stream. */
async function connect(
  t: TestContext,
  server: TestServer,
  cluster: string,
  resources: Parameters<typeof pushSnapshot>[3],
) {
  const client = mtlsClient(t, server, await registerCluster(server, cluster));
  const push = openPush(client);
  t.after(() => push.end());
  pushSnapshot(push, cluster, 1, resources);
  await next(push, (m) => m.ack ?? undefined);
  const pull = openPull(client);
  t.after(() => pull.end());
  pull.write({ hello: { heldHash: '' } });
  return pull;
}

const summary = (m: relay.v1.IResourceStatuses) =>
  (m.statuses ?? []).map((s) => `${s.kind} ${s.name} ${s.state?.approval ?? ''}`).sort();

test('given Gloo resources in cluster-a, when its agent pulls, then it receives the statuses of its own resources beside the output', async (t) => {
  const server = await startTestServer(t);
  const pull = await connect(t, server, 'cluster-a', statusFixture());
  const statuses = await next(
    pull,
    (m) => (m.statuses && (m.statuses.statuses ?? []).length > 0 ? m.statuses : undefined),
    10_000,
  );
  assert.deepEqual(summary(statuses), ['AccessPolicy reviews-lockdown INVALID', 'RouteTable reviews-route ACCEPTED']);
  assert.deepEqual(Object.keys(statuses.statuses?.[0]?.clusters ?? {}), ['cluster-a']);
});

test("given Gloo resources only in cluster-a, when cluster-b's agent pulls, then it receives no status of cluster-a's resources", async (t) => {
  const server = await startTestServer(t);
  const pullA = await connect(t, server, 'cluster-a', statusFixture());
  await next(pullA, (m) => (m.statuses && (m.statuses.statuses ?? []).length > 0 ? m.statuses : undefined), 10_000);
  // cluster-a's statuses exist now: the first report cluster-b gets is computed from them.
  const pullB = await connect(t, server, 'cluster-b', [service('web')]);
  const statuses = await next(pullB, (m) => m.statuses ?? undefined, 10_000);
  assert.deepEqual(summary(statuses), []);
});

test('given an agent that has its statuses, when translations change none of them, then none is sent again; when one changes, the new statuses are the next ones sent', async (t) => {
  const server = await startTestServer(t);
  const client = mtlsClient(t, server, await registerCluster(server, 'cluster-a'));
  const push = openPush(client);
  t.after(() => push.end());
  pushSnapshot(push, 'cluster-a', 1, statusFixture());
  await next(push, (m) => m.ack ?? undefined);
  const pull = openPull(client);
  t.after(() => pull.end());
  const received: relay.v1.IResourceStatuses[] = [];
  pull.on('data', (m: relay.v1.IPullResponse) => void (m.statuses && received.push(m.statuses)));
  pull.write({ hello: { heldHash: '' } });
  await waitFor(() => received.some((s) => (s.statuses ?? []).length > 0), {
    timeoutMs: 10_000,
    message: 'cluster-a never received its statuses',
  });
  const first = received.findIndex((s) => (s.statuses ?? []).length > 0);

  // Two more translations of the same inputs: the quiet RouteTable's status and the AccessPolicy's (which has notes)
  // stay as they are.
  await server.loop.runNow();
  await server.loop.runNow();
  const routeTableGeneration = (s: relay.v1.IResourceStatuses) =>
    s.statuses?.find((x) => x.kind === 'RouteTable')?.state?.observedGeneration;
  const bumped = statusFixture().map((r) =>
    r.kind === 'RouteTable' ? { ...r, metadata: { ...r.metadata, generation: 7 } } : r,
  );
  pushSnapshot(push, 'cluster-a', 2, bumped);
  await next(push, (m) => m.ack ?? undefined);
  await waitFor(() => received.some((s) => Number(routeTableGeneration(s)) === 7), {
    timeoutMs: 10_000,
    message: 'the new RouteTable generation never reached cluster-a',
  });

  assert.equal(
    received.length,
    first + 2,
    `statuses messages after the first: ${received
      .slice(first + 1)
      .map((s) => `RouteTable generation ${String(routeTableGeneration(s))}`)
      .join(', ')}`,
  );
  assert.deepEqual(
    summary(received[first + 1] as relay.v1.IResourceStatuses),
    summary(received[first] as relay.v1.IResourceStatuses),
  );
});
