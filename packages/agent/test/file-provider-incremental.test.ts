import assert from 'node:assert/strict';
import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { buildInputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { validateInputResource } from '@meshrelay/translator';
import { FileDiscoveryProvider } from '../src/discovery/file-provider.ts';
import { captureLogger, serviceYaml, tempDir } from './support/fixtures.ts';

async function startProvider(t: TestContext, dir: string, watch = true) {
  const { logger } = captureLogger();
  // The safety rescan is an hour away: only watch events (or an explicit rescan) can notice changes.
  const provider = new FileDiscoveryProvider({
    cluster: 'east',
    manifestsDir: dir,
    validate: validateInputResource,
    logger,
    debounceMs: 30,
    rescanIntervalMs: 3_600_000,
    watch,
    epoch: 'e',
  });
  await provider.start();
  t.after(() => provider.stop());
  return provider;
}

async function writeServices(dir: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await writeFile(path.join(dir, `svc-${i}.yaml`), serviceYaml(`svc-${i}`));
}

test('given a watched dir of many files, when one file is edited, then a new snapshot comes from reading that file alone', async (t) => {
  const dir = await tempDir(t);
  await writeServices(dir, 20);
  const provider = await startProvider(t, dir);
  assert.equal(provider.filesRead, 20);
  await writeFile(path.join(dir, 'svc-7.yaml'), serviceYaml('svc-7', 9090));
  await waitFor(() => provider.current?.generation === 2, { timeoutMs: 5000 });
  assert.equal(provider.filesRead, 21);
  const svc = provider.current?.resources.find((r) => r.metadata.name === 'svc-7');
  assert.deepEqual((svc?.spec as { ports: Array<{ port: number }> }).ports[0]?.port, 9090);
});

test('given an unchanged dir, when rescanned, then no file is read again', async (t) => {
  const dir = await tempDir(t);
  await writeServices(dir, 10);
  const provider = await startProvider(t, dir, false);
  await provider.rescan();
  await provider.rescan();
  assert.equal(provider.filesRead, 10);
  assert.equal(provider.current?.generation, 1);
});

test('given a running provider, when files are renamed and deleted, then the snapshot follows', async (t) => {
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'sub'));
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('a'));
  await writeFile(path.join(dir, 'sub', 'b.yaml'), serviceYaml('b'));
  await writeFile(path.join(dir, 'c.yaml'), serviceYaml('c'));
  const provider = await startProvider(t, dir);
  const names = (): string[] => (provider.current?.resources ?? []).map((r) => r.metadata.name);
  await rename(path.join(dir, 'a.yaml'), path.join(dir, 'a.yaml.disabled'));
  await waitFor(() => names().join() === 'b,c', { timeoutMs: 5000 });
  await rename(path.join(dir, 'sub'), path.join(dir, '.sub'));
  await waitFor(() => names().join() === 'c', { timeoutMs: 5000 });
  await rename(path.join(dir, '.sub'), path.join(dir, 'sub2'));
  await waitFor(() => names().join() === 'b,c', { timeoutMs: 5000 });
  await rm(path.join(dir, 'c.yaml'));
  await waitFor(() => names().join() === 'b', { timeoutMs: 5000 });
  assert.equal(provider.filesRead, 4, 'only sub2/b.yaml, a path not seen before, was read after the start');
});

/** mulberry32: the same seed gives the same edit sequence on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), state | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One random edit: write (new or changed content, sometimes a duplicate or a broken document), delete or rename a file;
 * returns how many files it wrote to.
 */
async function randomEdit(dir: string, random: () => number): Promise<number> {
  const pick = (n: number): number => Math.floor(random() * n);
  const file = path.join(dir, pick(2) === 0 ? '' : 'nested', `f${pick(8)}.yaml`);
  const roll = random();
  if (roll < 0.55) {
    const docs = Array.from({ length: 1 + pick(3) }, () =>
      random() < 0.1 ? 'kind: [broken\n' : serviceYaml(`s${pick(12)}`, 9000 + pick(3)),
    );
    await writeFile(file, docs.join('---\n'));
    return 1;
  }
  if (roll < 0.8) {
    await rm(file, { force: true });
    return 0;
  }
  await rename(file, path.join(dir, pick(2) === 0 ? '' : 'nested', `f${pick(8)}.yaml`)).catch(() => undefined);
  return 1;
}

test('given random edit sequences, when each is synced incrementally, then only written files are read and the snapshot equals a full rebuild of the same dir', async (t) => {
  for (const seed of [1, 2, 3]) {
    const dir = await tempDir(t);
    await mkdir(path.join(dir, 'nested'));
    const random = seeded(seed);
    const provider = await startProvider(t, dir, false);
    for (let step = 0; step < 25; step++) {
      const readsBefore = provider.filesRead;
      let written = 0;
      for (let k = 0; k < 1 + Math.floor(random() * 3); k++) written += await randomEdit(dir, random);
      await provider.rescan();
      assert.ok(
        provider.filesRead - readsBefore <= written,
        `seed ${seed} step ${step}: read ${provider.filesRead - readsBefore} files after writing ${written}`,
      );
      const fresh = new FileDiscoveryProvider({
        cluster: 'east',
        manifestsDir: dir,
        validate: validateInputResource,
        logger: captureLogger().logger,
        watch: false,
        epoch: 'e',
      });
      await fresh.start();
      await fresh.stop();
      const current = provider.current;
      assert.ok(current && fresh.current);
      const full = buildInputSnapshot({
        cluster: 'east',
        epoch: 'e',
        generation: current.generation,
        resources: fresh.current.resources,
      });
      assert.equal(current.hash, full.hash, `seed ${seed} step ${step}: incremental hash differs from a full rebuild`);
      assert.equal(current.bytes, full.bytes);
      assert.deepEqual(current.resources, full.resources);
      assert.deepEqual(provider.problems, fresh.problems, `seed ${seed} step ${step}: problems differ`);
    }
  }
});

test('given a ConfigMap-like layout, when its ..data link is swapped to a new version, then the change is published from the watch, re-reading only the links that moved', async (t) => {
  const dir = await tempDir(t);
  const version = async (name: string, port: number): Promise<void> => {
    await mkdir(path.join(dir, name));
    await writeFile(path.join(dir, name, 'a.yaml'), serviceYaml('a', port));
    await writeFile(path.join(dir, name, 'b.yaml'), serviceYaml('b'));
  };
  await version('..v1', 9080);
  await symlink('..v1', path.join(dir, '..data'));
  for (const file of ['a.yaml', 'b.yaml']) await symlink(path.join('..data', file), path.join(dir, file));
  const provider = await startProvider(t, dir);
  await version('..v2', 9090);
  // As the kubelet does: a new link, renamed over ..data in one step.
  await symlink('..v2', path.join(dir, '..data_tmp'));
  await rename(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
  await waitFor(() => provider.current?.generation === 2, { timeoutMs: 5000 });
  const a = provider.current?.resources.find((r) => r.metadata.name === 'a');
  assert.equal((a?.spec as { ports: Array<{ port: number }> }).ports[0]?.port, 9090);
  // Both links now lead to new inodes, so both are read again; nothing else is.
  assert.equal(provider.filesRead, 4);
});
