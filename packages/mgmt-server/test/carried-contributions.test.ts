import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { DirectoryDocumentStore, type SharedDocumentStore } from '@meshrelay/registry';
import { buildNode, buildTestInputSnapshot, waitFor } from '@meshrelay/testkit';
import { CarriedContributions } from '../src/carried-contributions.ts';
import { HeldDocuments } from './held-documents.ts';

const NOW = new Date('2026-11-23T10:00:00Z');
const inputC = buildTestInputSnapshot('cluster-c', [buildNode({ name: 'node-c1', zone: 'eu-north-1a' })]);
const inputC2 = buildTestInputSnapshot('cluster-c', [buildNode({ name: 'node-c2', zone: 'eu-north-1a' })]);

async function contributions(
  t: TestContext,
  dir?: string,
  documentsIn: (root: string) => SharedDocumentStore = (root) => new DirectoryDocumentStore(root),
): Promise<{ store: CarriedContributions; dir: string }> {
  const root = dir ?? (await mkdtemp(join(tmpdir(), 'meshrelay-contributions-')));
  if (!dir) t.after(() => rm(root, { recursive: true, force: true }));
  const store = new CarriedContributions(documentsIn(root), pino({ level: 'silent' }));
  t.after(() => store.stop());
  return { store, dir: root };
}

test('given a remembered input, when its cluster is absent, then a replica sharing the directory carries exactly that input', async (t) => {
  const { store, dir } = await contributions(t);
  await store.remember([inputC]);
  const { store: other } = await contributions(t, dir);
  const carried = await other.carry(['cluster-c', 'cluster-d'], NOW);
  assert.deepEqual([...carried.keys()], ['cluster-c']);
  assert.equal(carried.get('cluster-c')?.hash, inputC.hash);
  assert.deepEqual(other.carried(), [
    { cluster: 'cluster-c', inputHash: inputC.hash, generation: inputC.generation, since: NOW },
  ]);
});

test('given a carried contribution, when an operator releases it, then it is no longer carried and counts as released until the cluster returns', async (t) => {
  const { store } = await contributions(t);
  await store.remember([inputC]);
  await store.carry(['cluster-c'], NOW);
  assert.equal(await store.release('cluster-c', NOW), inputC.hash);
  assert.equal((await store.carry(['cluster-c'], NOW)).size, 0);
  assert.equal(store.isReleased('cluster-c'), true);
  assert.deepEqual(store.carried(), []);
  assert.equal(await store.release('cluster-c', NOW), undefined, 'nothing left to release');
  await store.remember([inputC2]);
  assert.equal(store.isReleased('cluster-c'), false);
  assert.equal((await store.carry(['cluster-c'], NOW)).get('cluster-c')?.hash, inputC2.hash);
});

test('given a kept record whose content no longer matches its hash, when carrying, then it is not carried', async (t) => {
  const { store, dir } = await contributions(t);
  await store.remember([inputC]);
  const path = join(dir, 'cluster-c.json');
  const record = JSON.parse(await readFile(path, 'utf8')) as { resources: unknown[] };
  await writeFile(path, JSON.stringify({ ...record, resources: [] }));
  assert.equal((await store.carry(['cluster-c'], NOW)).size, 0);
});

test('given a deregistered cluster, when forgotten, then nothing of it is carried any more', async (t) => {
  const { store } = await contributions(t);
  await store.remember([inputC]);
  await store.forget('cluster-c');
  assert.equal((await store.carry(['cluster-c'], NOW)).size, 0);
});

test('given a carried cluster, when another replica releases it, then the watcher asks for a new translation', async (t) => {
  const { store, dir } = await contributions(t);
  await store.remember([inputC]);
  await store.carry(['cluster-c'], NOW);
  let triggered = 0;
  store.watch(() => triggered++);
  const { store: other } = await contributions(t, dir);
  await other.release('cluster-c', NOW);
  await waitFor(() => triggered > 0, { timeoutMs: 5000, message: 'the release on the other replica was not noticed' });
});

test('given a watched carried contribution, when translations repeat unchanged, then the record is read once, and again only after another replica changed it', async (t) => {
  const { store, dir } = await contributions(t);
  await store.remember([inputC]);
  const documents = new DirectoryDocumentStore(dir);
  let reads = 0;
  const get = documents.get.bind(documents);
  documents.get = (name: string) => {
    reads++;
    return get(name);
  };
  const watched = new CarriedContributions(documents, pino({ level: 'silent' }));
  t.after(() => watched.stop());
  let triggered = 0;
  watched.watch(() => triggered++);
  // The watch's first look reports every record once; reads until then are not kept.
  await waitFor(
    async () => {
      const before = reads;
      await watched.carry(['cluster-c'], NOW);
      return reads === before;
    },
    { timeoutMs: 5000, message: 'carrying never stopped re-reading the unchanged record' },
  );
  const warm = reads;
  const noticed = triggered;
  for (let run = 0; run < 3; run++)
    assert.equal((await watched.carry(['cluster-c'], NOW)).get('cluster-c')?.hash, inputC.hash);
  assert.equal(reads, warm, 'an unchanged record was read again');
  await store.release('cluster-c', NOW);
  await waitFor(() => triggered > noticed, { timeoutMs: 5000, message: 'the release was not noticed' });
  assert.equal(
    (await watched.carry(['cluster-c'], NOW)).size,
    0,
    'a released contribution is not carried from a stale copy',
  );
  assert.equal(reads, warm + 1);
});

test('given a record kept for an input, when a replica that just started remembers the same input, then the record is not written again', async (t) => {
  const { store, dir } = await contributions(t);
  await store.remember([inputC]);
  const { store: restarted } = await contributions(t, dir);
  const before = await stat(join(dir, 'cluster-c.json'));
  await restarted.remember([inputC]);
  const after = await stat(join(dir, 'cluster-c.json'));
  assert.deepEqual([after.ino, after.mtimeMs], [before.ino, before.mtimeMs]);
  // It still writes a changed input, and carries what it wrote.
  await restarted.remember([inputC2]);
  assert.equal(
    (await (await contributions(t, dir)).store.carry(['cluster-c'], NOW)).get('cluster-c')?.hash,
    inputC2.hash,
  );
});

test('given a released record of an input, when a replica that just started remembers the same input, then the record is written again and the release ends', async (t) => {
  const { store, dir } = await contributions(t);
  await store.remember([inputC]);
  await store.release('cluster-c', NOW);
  const { store: restarted } = await contributions(t, dir);
  await restarted.remember([inputC]);
  assert.equal((await restarted.carry(['cluster-c'], NOW)).get('cluster-c')?.hash, inputC.hash);
  assert.equal(restarted.isReleased('cluster-c'), false);
});

/** Contributions kept through HeldDocuments: `store` writes nothing until `documents.release()`. */
async function heldContributions(t: TestContext): Promise<{ store: CarriedContributions; documents: HeldDocuments }> {
  let documents: HeldDocuments | undefined;
  const { store } = await contributions(t, undefined, (root) => (documents = new HeldDocuments(root)));
  return { store, documents: documents as HeldDocuments };
}

test('given a kept copy that is still being written, when two newer inputs of the cluster come, then only the newest is written after it', async (t) => {
  const { store, documents } = await heldContributions(t);
  const inputC3 = buildTestInputSnapshot('cluster-c', [buildNode({ name: 'node-c3', zone: 'eu-north-1a' })]);

  const first = store.remember([inputC]);
  await new Promise((resolve) => setImmediate(resolve));
  void store.remember([inputC2]);
  const last = store.remember([inputC3]);
  documents.release();
  await Promise.all([first, last]);

  assert.deepEqual(documents.written, [`cluster-c@${inputC.hash}`, `cluster-c@${inputC3.hash}`]);
});

test('given a kept copy waiting to be written, when its cluster is absent and carried, then the carry waits for it and carries that input', async (t) => {
  const { store, documents } = await heldContributions(t);

  void store.remember([inputC]);
  let carried: Map<string, unknown> | undefined;
  const carrying = store.carry(['cluster-c'], NOW).then((c) => (carried = c));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(carried, undefined, 'the carry waited for the held write');
  documents.release();
  await carrying;

  assert.deepEqual([...(carried ?? new Map()).keys()], ['cluster-c']);
});

test('given a carry reading a record while this replica releases it, when carrying again, then the read that overlapped the release is not kept', async (t) => {
  const { store: writer, dir } = await contributions(t);
  const inputD = buildTestInputSnapshot('cluster-d', [buildNode({ name: 'node-d1', zone: 'eu-north-1b' })]);
  await writer.remember([inputC, inputD]);
  const documents = new DirectoryDocumentStore(dir);
  const get = documents.get.bind(documents);
  let reads = 0;
  let hold: Promise<void> | undefined;
  documents.get = async (name: string) => {
    reads++;
    const body = await get(name);
    // The held read has the record from before the release, and hands it over only after it.
    const held = name === 'cluster-c' ? hold : undefined;
    if (held) {
      hold = undefined;
      await held;
    }
    return body;
  };
  const watched = new CarriedContributions(documents, pino({ level: 'silent' }));
  t.after(() => watched.stop());
  watched.watch(() => undefined);
  // Past the watch's first look (which reports every record), reads are kept: cluster-d is read once more at most.
  await waitFor(
    async () => {
      const before = reads;
      await watched.carry(['cluster-d'], NOW);
      return reads === before;
    },
    { timeoutMs: 5000, message: 'carrying never stopped re-reading the unchanged record' },
  );

  let letGo!: () => void;
  hold = new Promise<void>((resolve) => (letGo = resolve));
  const overlapping = watched.carry(['cluster-c'], NOW);
  await waitFor(() => hold === undefined, { timeoutMs: 5000, message: 'the carry never read the record' });
  assert.equal(await watched.release('cluster-c', NOW), inputC.hash);
  letGo();
  await overlapping;
  assert.equal(
    (await watched.carry(['cluster-c'], NOW)).size,
    0,
    'a released contribution is carried from a read made before the release',
  );
});
