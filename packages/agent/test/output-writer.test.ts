import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, readlink, realpath, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { parse } from 'yaml';
import { MeshrelayError, buildOutputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { FileOutputWriter } from '../src/apply/output-writer.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';

function virtualService(name: string, host = `${name}.global`): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name, namespace: 'bookinfo', labels: { 'meshrelay.io/owned-by': 'meshrelay' } },
    spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
  };
}

function output(...resources: Resource[]): OutputSnapshot {
  return buildOutputSnapshot({
    cluster: 'east',
    resources,
    provenance: [{ cluster: 'east', inputHash: 'a'.repeat(64) }],
  });
}

async function setup(t: TestContext) {
  const root = await tempDir(t);
  const outputDir = path.join(root, 'out');
  const stateDir = path.join(root, 'state');
  const make = () => new FileOutputWriter({ cluster: 'east', outputDir, stateDir, logger: captureLogger().logger });
  return { outputDir, stateDir, writer: make(), make };
}

test('given an output, when applied, then current points at a complete version with one YAML per resource and snapshot.json', async (t) => {
  const { outputDir, writer } = await setup(t);
  const out = output(virtualService('reviews'), virtualService('ratings'));
  assert.equal(await writer.apply(out), true);
  assert.equal(await readlink(path.join(outputDir, 'current')), path.join('.versions', out.hash));
  const files = (await readdir(path.join(outputDir, 'current'))).sort();
  assert.deepEqual(files, [
    'VirtualService.bookinfo.ratings.yaml',
    'VirtualService.bookinfo.reviews.yaml',
    'snapshot.json',
  ]);
  const snapshot = JSON.parse(await readFile(path.join(outputDir, 'current', 'snapshot.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  assert.deepEqual(snapshot, { cluster: 'east', hash: out.hash, provenance: out.provenance, resources: out.resources });
  assert.match(
    await readFile(path.join(outputDir, 'current', 'VirtualService.bookinfo.reviews.yaml'), 'utf8'),
    /hosts:\n\s+- reviews.global/,
  );
  assert.equal(writer.heldHash, out.hash);
});

test('given a reader polling current, when versions are swapped repeatedly, then it only ever sees whole versions', async (t) => {
  const { outputDir, writer } = await setup(t);
  const versions = Array.from({ length: 12 }, (_, i) =>
    output(...Array.from({ length: 1 + (i % 4) }, (_, j) => virtualService(`svc-${j}`, `h${i}.global`))),
  );
  let applying = true;
  let reads = 0;
  const reader = (async () => {
    while (applying) {
      let dir: string;
      try {
        dir = await realpath(path.join(outputDir, 'current'));
        const files = await readdir(dir);
        const snap = JSON.parse(await readFile(path.join(dir, 'snapshot.json'), 'utf8')) as {
          hash: string;
          resources: unknown[];
        };
        assert.equal(path.basename(dir), snap.hash, 'snapshot.json belongs to its version directory');
        assert.equal(files.length, snap.resources.length + 1, 'every resource file is there');
        reads++;
      } catch (err) {
        // A version may be pruned between resolving `current` and reading it; never a partial one.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  })();
  for (const v of versions) await writer.apply(v);
  applying = false;
  await reader;
  assert.ok(reads > 0, 'the reader observed at least one version');
  assert.equal(writer.heldHash, versions.at(-1)?.hash);
});

test('given three applied versions, when the third is served, then only the current and previous versions are kept', async (t) => {
  const { outputDir, writer } = await setup(t);
  const [v1, v2, v3] = [output(virtualService('a')), output(virtualService('b')), output(virtualService('c'))];
  for (const v of [v1, v2, v3]) await writer.apply(v);
  assert.deepEqual((await readdir(path.join(outputDir, '.versions'))).sort(), [v2.hash, v3.hash].sort());
});

test('given an output already served, when the same hash is applied again, then nothing is rewritten', async (t) => {
  const { outputDir, stateDir, writer } = await setup(t);
  const out = output(virtualService('reviews'));
  await writer.apply(out);
  const marker = path.join(outputDir, '.versions', out.hash, 'marker');
  await writeFile(marker, 'untouched');
  const stateBefore = await stat(path.join(stateDir, 'applied-output.json'));
  assert.equal(await writer.apply(output(virtualService('reviews'))), false);
  assert.equal(await readFile(marker, 'utf8'), 'untouched');
  assert.equal((await stat(path.join(stateDir, 'applied-output.json'))).mtimeMs, stateBefore.mtimeMs);
});

test('given an output whose resources do not match its hash, when applied, then it is refused and the previous version stays', async (t) => {
  const { outputDir, writer } = await setup(t);
  const good = output(virtualService('reviews'));
  await writer.apply(good);
  const forged = { ...output(virtualService('ratings')), hash: 'f'.repeat(64) };
  await assert.rejects(
    writer.apply(forged),
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
  );
  assert.equal(await readlink(path.join(outputDir, 'current')), path.join('.versions', good.hash));
  assert.equal(writer.heldHash, good.hash);
});

test('given a persisted last output and a lost output dir, when a new writer restores, then current serves that output again', async (t) => {
  const { outputDir, stateDir, writer, make } = await setup(t);
  const out = output(virtualService('reviews'));
  await writer.apply(out);
  assert.equal((await stat(path.join(stateDir, 'applied-output.json'))).mode & 0o777, 0o600);
  await rm(outputDir, { recursive: true });
  const restarted = make();
  const restored = await restarted.restore();
  assert.equal(restored?.hash, out.hash);
  assert.equal(restarted.heldHash, out.hash);
  assert.deepEqual((await readdir(path.join(outputDir, 'current'))).sort(), [
    'VirtualService.bookinfo.reviews.yaml',
    'snapshot.json',
  ]);
});

test('given a corrupt state file, when restoring, then it is ignored and nothing is held', async (t) => {
  const { stateDir, writer, make } = await setup(t);
  await writer.apply(output(virtualService('reviews')));
  const [file] = await readdir(path.join(stateDir, 'resources'));
  await writeFile(path.join(stateDir, 'resources', file ?? ''), JSON.stringify(virtualService('tampered')));
  const restarted = make();
  assert.equal(await restarted.restore(), undefined);
  assert.equal(restarted.heldHash, '');
});

test('given no state at all, when restoring, then nothing is held', async (t) => {
  const { make } = await setup(t);
  const writer = make();
  assert.equal(await writer.restore(), undefined);
  assert.equal(writer.heldHash, '');
});

const inode = async (file: string): Promise<number> => (await stat(file)).ino;

test('given an applied output, when one resource changes, then only its file is written: the others are the same files', async (t) => {
  const { outputDir, stateDir, writer } = await setup(t);
  const v1 = output(virtualService('a'), virtualService('b'), virtualService('c'));
  const v2 = output(virtualService('a'), virtualService('b', 'moved.global'), virtualService('c'));
  await writer.apply(v1);
  const stateFiles = new Set(await readdir(path.join(stateDir, 'resources')));
  await writer.apply(v2);
  const file = (v: OutputSnapshot, name: string) =>
    path.join(outputDir, '.versions', v.hash, `VirtualService.bookinfo.${name}.yaml`);
  assert.equal(await inode(file(v2, 'a')), await inode(file(v1, 'a')));
  assert.equal(await inode(file(v2, 'c')), await inode(file(v1, 'c')));
  assert.notEqual(await inode(file(v2, 'b')), await inode(file(v1, 'b')));
  assert.match(await readFile(file(v2, 'b'), 'utf8'), /- moved.global/);
  assert.match(await readFile(file(v1, 'b'), 'utf8'), /- b.global/, 'the previous version is untouched');
  const written = (await readdir(path.join(stateDir, 'resources'))).filter((f) => !stateFiles.has(f));
  assert.equal(written.length, 1, 'one state file written, for the changed resource');
});

test('given many one-resource changes, when each is applied, then current and previous versions always hold exactly their outputs', async (t) => {
  const { outputDir, writer } = await setup(t);
  const hosts = ['a.global', 'b.global', 'c.global'];
  const applied: OutputSnapshot[] = [];
  for (let k = 0; k < 9; k++) {
    // Flips one host back and forth, adds and drops a resource: recycled directories must match their new output.
    hosts[k % 3] = k % 2 === 0 ? `v${k}.global` : 'a.global';
    const extra = k % 4 === 0 ? [virtualService('extra')] : [];
    const v = output(...hosts.map((h, i) => virtualService(`svc-${i}`, h)), ...extra);
    await writer.apply(v);
    applied.push(v);
    for (const version of applied.slice(-2)) {
      const dir = path.join(outputDir, '.versions', version.hash);
      const files = (await readdir(dir)).filter((f) => f !== 'snapshot.json').sort();
      assert.deepEqual(files, version.resources.map((r) => `VirtualService.bookinfo.${r.metadata.name}.yaml`).sort());
      for (const r of version.resources) {
        assert.deepEqual(
          parse(await readFile(path.join(dir, `VirtualService.bookinfo.${r.metadata.name}.yaml`), 'utf8')),
          r,
        );
      }
      assert.equal(
        (JSON.parse(await readFile(path.join(dir, 'snapshot.json'), 'utf8')) as { hash: string }).hash,
        version.hash,
      );
    }
  }
});

test('given the whole-output state file of an earlier release, when restoring, then it is served and the next apply replaces it', async (t) => {
  const { outputDir, stateDir, make } = await setup(t);
  const out = output(virtualService('reviews'));
  await mkdir(stateDir, { recursive: true });
  await writeFile(
    path.join(stateDir, 'last-output.json'),
    JSON.stringify({ cluster: out.cluster, hash: out.hash, provenance: out.provenance, resources: out.resources }),
  );
  const writer = make();
  assert.equal((await writer.restore())?.hash, out.hash);
  assert.equal(await readlink(path.join(outputDir, 'current')), path.join('.versions', out.hash));
  await writer.apply(output(virtualService('ratings')));
  assert.deepEqual((await readdir(stateDir)).sort(), ['applied-output.json', 'resources']);
});

test('given a stray file in the previous version, when that directory is recycled into a new version, then the new version holds only its output', async (t) => {
  const { outputDir, writer } = await setup(t);
  const [v1, v2, v3] = [
    output(virtualService('a', 'x1.global')),
    output(virtualService('a', 'x2.global')),
    output(virtualService('a', 'x3.global')),
  ];
  await writer.apply(v1);
  await writer.apply(v2);
  await writeFile(path.join(outputDir, '.versions', v1.hash, 'stray.yaml'), 'kind: Stray\n');
  await writer.apply(v3);
  assert.deepEqual((await readdir(path.join(outputDir, '.versions', v3.hash))).sort(), [
    'VirtualService.bookinfo.a.yaml',
    'snapshot.json',
  ]);
  assert.match(
    await readFile(path.join(outputDir, '.versions', v3.hash, 'VirtualService.bookinfo.a.yaml'), 'utf8'),
    /- x3.global/,
  );
  assert.match(
    await readFile(path.join(outputDir, '.versions', v2.hash, 'VirtualService.bookinfo.a.yaml'), 'utf8'),
    /- x2.global/,
  );
});

test('given resources whose names differ only in characters a file name cannot hold, when applied, then each gets a file of its own', async (t) => {
  const { outputDir, writer } = await setup(t);
  const names = ['reviews:v1', 'reviews@v1', 'reviews_v1'];
  const out = output(...names.map((name) => virtualService(name, 'reviews.global')));
  assert.equal(await writer.apply(out), true);
  const files = (await readdir(path.join(outputDir, 'current'))).filter((f) => f.endsWith('.yaml'));
  assert.equal(files.length, 3, `three files, got ${files.join(', ')}`);
  const written = await Promise.all(
    files.map(
      async (f) => (parse(await readFile(path.join(outputDir, 'current', f), 'utf8')) as Resource).metadata.name,
    ),
  );
  assert.deepEqual(written.sort(), [...names].sort());
});
