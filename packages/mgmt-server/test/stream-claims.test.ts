import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { DirectoryDocumentStore } from '@meshrelay/registry';
import { waitFor } from '@meshrelay/testkit';
import { ConnectionTracker, type StreamHandle, type StreamKind } from '../src/connections.ts';
import { StreamClaims } from '../src/stream-claims.ts';

function handle(connections: ConnectionTracker, cluster: string, kind: StreamKind, ended: string[]): StreamHandle {
  return {
    id: connections.nextId(),
    cluster,
    kind,
    peer: 'test',
    openedAt: new Date(),
    certificateNotBefore: new Date(0),
    queuedBytes: () => 0,
    goAway: () => undefined,
    terminate: (_code, message) => ended.push(message),
  };
}

async function replica(t: TestContext, dir: string, name: string): Promise<ConnectionTracker> {
  return (await replicaWithClaims(t, dir, name)).connections;
}

async function replicaWithClaims(
  t: TestContext,
  dir: string,
  name: string,
): Promise<{ connections: ConnectionTracker; claims: StreamClaims }> {
  const connections = new ConnectionTracker();
  const claims = new StreamClaims(new DirectoryDocumentStore(dir), name, connections, pino({ level: 'silent' }));
  claims.start();
  t.after(() => claims.stop());
  return { connections, claims };
}

test('given a push stream of a cluster on replica A, when a newer one opens on replica B, then A fences its own off and B keeps it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-claims-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const a = await replica(t, dir, 'mgmt-a');
  const b = await replica(t, dir, 'mgmt-b');
  const endedA: string[] = [];
  const endedB: string[] = [];
  a.add(handle(a, 'east', 'push', endedA), () => undefined);
  a.add(handle(a, 'east', 'pull', endedA), () => undefined);
  // A's claim lands first: B's stream is the newer one.
  await waitFor(() => existsSync(join(dir, 'east.push.json')), { timeoutMs: 5000 });
  b.add(handle(b, 'east', 'push', endedB), () => undefined);
  await waitFor(() => endedA.length === 1, { timeoutMs: 5000, message: 'A did not fence its older push stream' });
  assert.match(endedA[0] ?? '', /^MESHRELAY_ERR_FENCED: .*replica mgmt-b/);
  assert.equal(endedA.length, 1, 'only the push stream was taken over');
  assert.deepEqual(endedB, []);
});

test("given the claims of a cluster's streams, when the cluster is deregistered and forgotten, then no claim of it is left", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-claims-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { connections, claims } = await replicaWithClaims(t, dir, 'mgmt-a');
  connections.add(handle(connections, 'east', 'push', []), () => undefined);
  connections.add(handle(connections, 'east', 'pull', []), () => undefined);
  await waitFor(() => existsSync(join(dir, 'east.push.json')) && existsSync(join(dir, 'east.pull.json')), {
    timeoutMs: 5000,
  });
  await claims.forget('east');
  assert.deepEqual(await new DirectoryDocumentStore(dir).list(), []);
});
