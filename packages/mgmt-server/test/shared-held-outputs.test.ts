import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { DirectoryDocumentStore } from '@meshrelay/registry';
import { waitFor } from '@meshrelay/testkit';
import { HeldOutputs } from '../src/held-outputs.ts';
import { SharedHeldOutputs } from '../src/shared-held-outputs.ts';

const HOLD = {
  cluster: 'east',
  hash: 'h1',
  reason: 'delete-share',
  message: 'would delete 3 of 4',
  deleted: 3,
  held: 4,
  missingClusters: [],
} as const;

async function replica(
  t: TestContext,
  dir: string,
  name: string,
): Promise<{ held: HeldOutputs; shared: SharedHeldOutputs }> {
  const held = new HeldOutputs();
  const shared = new SharedHeldOutputs(new DirectoryDocumentStore(dir), name, held, pino({ level: 'silent' }));
  shared.start();
  t.after(() => shared.stop());
  return { held, shared };
}

async function sharedDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-held-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('given an output held on replica B, when replica A lists held outputs, then it sees it with its holder', async (t) => {
  const dir = await sharedDir(t);
  const a = await replica(t, dir, 'mgmt-a');
  const b = await replica(t, dir, 'mgmt-b');
  b.held.hold(HOLD, new Date('2026-11-23T10:00:00Z'));
  await waitFor(async () => (await a.shared.list()).length === 1, { timeoutMs: 5000 });
  const [seen] = await a.shared.list();
  assert.equal(seen?.replica, 'mgmt-b');
  assert.equal(seen?.hash, 'h1');
  assert.equal(seen?.since.toISOString(), '2026-11-23T10:00:00.000Z');
});

test('given an output held on replica B, when released through replica A, then B releases that hash and nobody lists it', async (t) => {
  const dir = await sharedDir(t);
  const a = await replica(t, dir, 'mgmt-a');
  const b = await replica(t, dir, 'mgmt-b');
  const released: string[] = [];
  b.held.onRelease((cluster) => released.push(cluster));
  b.held.hold(HOLD, new Date());
  await waitFor(async () => (await a.shared.list()).length === 1, { timeoutMs: 5000 });
  assert.equal((await a.shared.release('east'))?.hash, 'h1');
  await waitFor(() => released.length === 1, { timeoutMs: 5000, message: 'B did not release' });
  assert.equal(b.held.get('east'), undefined);
  await waitFor(async () => (await a.shared.list()).length === 0, { timeoutMs: 5000 });
  assert.equal(await a.shared.release('east'), undefined, 'nothing left to release');
});

test('given records a replica left before its restart, when it starts again, then they are dropped', async (t) => {
  const dir = await sharedDir(t);
  const before = await replica(t, dir, 'mgmt-b');
  before.held.hold(HOLD, new Date());
  const a = await replica(t, dir, 'mgmt-a');
  await waitFor(async () => (await a.shared.list()).length === 1, { timeoutMs: 5000 });
  await before.shared.stop();
  await replica(t, dir, 'mgmt-b');
  await waitFor(async () => (await a.shared.list()).length === 0, {
    timeoutMs: 5000,
    message: 'the old record stayed',
  });
});
