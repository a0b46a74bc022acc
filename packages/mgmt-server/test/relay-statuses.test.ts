import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { relay } from '@meshrelay/api';
import { statusFixture } from '@meshrelay/testkit';
import { mtlsClient, next, openPull, openPush, pushSnapshot, registerCluster, service, startTestServer, type TestServer } from './harness.ts';

/** Connects `cluster` as its agent does: pushes `resources`, opens a pull stream; returns the pull stream. */
async function connect(t: TestContext, server: TestServer, cluster: string, resources: Parameters<typeof pushSnapshot>[3]) {
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

const summary = (m: relay.v1.IResourceStatuses) => (m.statuses ?? []).map((s) => `${s.kind} ${s.name} ${s.state?.approval ?? ''}`).sort();

test('given Gloo resources in cluster-a, when its agent pulls, then it receives the statuses of its own resources beside the output', async (t) => {
  const server = await startTestServer(t);
  const pull = await connect(t, server, 'cluster-a', statusFixture());
  const statuses = await next(pull, (m) => (m.statuses && (m.statuses.statuses ?? []).length > 0 ? m.statuses : undefined), 10_000);
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
