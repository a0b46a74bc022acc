import assert from 'node:assert/strict';
import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { MeshrelayError, type InputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { validateInputResource } from '@meshrelay/translator';
import { FileDiscoveryProvider } from '../src/discovery/file-provider.ts';
import { captureLogger, serviceYaml, tempDir } from './support/fixtures.ts';

async function startProvider(
  t: TestContext,
  dir: string,
  options: { rescanIntervalMs?: number; watch?: boolean } = {},
) {
  const { logger, lines } = captureLogger();
  const provider = new FileDiscoveryProvider({
    cluster: 'east',
    manifestsDir: dir,
    validate: validateInputResource,
    logger,
    debounceMs: 50,
    // Long by default: changes must be noticed by the watcher, not by the rescan.
    rescanIntervalMs: options.rescanIntervalMs ?? 60_000,
    watch: options.watch ?? true,
    epoch: 'epoch-1',
  });
  const published: InputSnapshot[] = [];
  provider.onSnapshot((s) => published.push(s));
  await provider.start();
  t.after(() => provider.stop());
  return { provider, published, lines };
}

function names(snapshot: InputSnapshot | undefined): string[] {
  return (snapshot?.resources ?? []).map((r) => `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`);
}

test('given a directory of manifests, when the provider starts, then generation 1 holds every normalized resource', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'reviews.yaml'), serviceYaml('reviews'));
  await mkdir(path.join(dir, 'nested'));
  await writeFile(path.join(dir, 'nested', 'two.yml'), `${serviceYaml('ratings')}---\n${serviceYaml('details')}`);
  await writeFile(path.join(dir, 'notes.txt'), 'not a manifest');
  const { provider, published } = await startProvider(t, dir);
  const snapshot = provider.current;
  assert.equal(snapshot?.generation, 1);
  assert.equal(snapshot?.epoch, 'epoch-1');
  assert.deepEqual(names(snapshot), [
    'Service/bookinfo/details',
    'Service/bookinfo/ratings',
    'Service/bookinfo/reviews',
  ]);
  assert.equal(
    snapshot?.resources[0]?.metadata['resourceVersion' as 'name'],
    undefined,
    'volatile metadata is dropped',
  );
  assert.deepEqual(provider.problems, []);
  assert.equal(published.length, 1);
});

test('given a running provider, when a file is added, then a new generation appears after the debounce', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews'));
  const { provider } = await startProvider(t, dir);
  await writeFile(path.join(dir, 'b.yaml'), serviceYaml('ratings'));
  await waitFor(() => provider.current?.generation === 2, { timeoutMs: 5000 });
  assert.deepEqual(names(provider.current), ['Service/bookinfo/ratings', 'Service/bookinfo/reviews']);
});

test('given a running provider, when a file is modified, then the new content is the next generation', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews', 9080));
  const { provider } = await startProvider(t, dir);
  const before = provider.current?.hash;
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews', 9090));
  await waitFor(() => provider.current?.generation === 2, { timeoutMs: 5000 });
  assert.notEqual(provider.current?.hash, before);
  const spec = provider.current?.resources[0]?.spec as { ports: Array<{ port: number }> };
  assert.equal(spec.ports[0]?.port, 9090);
});

test('given a running provider, when a file is deleted, then its resources leave the next generation', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews'));
  await writeFile(path.join(dir, 'b.yaml'), serviceYaml('ratings'));
  const { provider } = await startProvider(t, dir);
  await rm(path.join(dir, 'b.yaml'));
  await waitFor(() => provider.current?.generation === 2, { timeoutMs: 5000 });
  assert.deepEqual(names(provider.current), ['Service/bookinfo/reviews']);
});

test('given a malformed YAML file and an invalid resource, when scanned, then both are reported with file, document and field while the rest goes up', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'good.yaml'), serviceYaml('reviews'));
  await writeFile(path.join(dir, 'broken.yaml'), 'apiVersion: v1\nkind: Service\nmetadata: { name: x\n  bad: [\n');
  await writeFile(path.join(dir, 'mixed.yaml'), `${serviceYaml('ratings')}---\n${serviceYaml('details', 99999)}`);
  const { provider, lines } = await startProvider(t, dir);
  assert.deepEqual(names(provider.current), ['Service/bookinfo/ratings', 'Service/bookinfo/reviews']);
  const invalid = provider.problems.find((p) => p.file === 'mixed.yaml');
  assert.deepEqual(invalid, {
    file: 'mixed.yaml',
    document: 1,
    path: 'spec.ports[0].port',
    message: 'must be <= 65535',
  });
  const malformed = provider.problems.find((p) => p.file === 'broken.yaml');
  assert.equal(malformed?.document, 0);
  assert.match(malformed?.message ?? '', /not valid YAML/);
  const logged = lines.filter((l) => String(l['msg']).startsWith('input problem:')).map((l) => String(l['msg']));
  assert.ok(
    logged.some((m) => m.includes('mixed.yaml document 1 field spec.ports[0].port')),
    logged.join('\n'),
  );
  assert.ok(
    logged.some((m) => m.includes('broken.yaml document 0')),
    logged.join('\n'),
  );
});

test('given a document without apiVersion, when scanned, then the problem names the missing field', async (t) => {
  const dir = await tempDir(t);
  await writeFile(
    path.join(dir, 'a.json'),
    JSON.stringify([{ kind: 'Service', metadata: { name: 'x', namespace: 'y' } }]),
  );
  const { provider } = await startProvider(t, dir);
  assert.deepEqual(provider.problems, [
    { file: 'a.json', document: 0, path: 'apiVersion', message: 'is required and must be a non-empty string' },
  ]);
  assert.deepEqual(names(provider.current), []);
});

test('given two files defining the same resource, when scanned, then the first by path wins and the other is reported', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews', 9080));
  await writeFile(path.join(dir, 'b.yaml'), serviceYaml('reviews', 9090));
  const { provider } = await startProvider(t, dir);
  const spec = provider.current?.resources[0]?.spec as { ports: Array<{ port: number }> };
  assert.equal(provider.current?.resources.length, 1);
  assert.equal(spec.ports[0]?.port, 9080);
  assert.equal(provider.problems.length, 1);
  assert.equal(provider.problems[0]?.file, 'b.yaml');
  assert.match(provider.problems[0]?.message ?? '', /duplicate .*already defined in a\.yaml document 0/);
});

test('given unchanged content, when files are rewritten and rescanned, then no new generation is published', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews'));
  const { provider, published } = await startProvider(t, dir);
  // Same resource, different formatting and a volatile field: equal after normalization.
  await writeFile(path.join(dir, 'a.yaml'), `# a comment\n${serviceYaml('reviews').replace('"123"', '"456"')}`);
  await provider.rescan();
  await provider.rescan();
  assert.equal(provider.current?.generation, 1);
  assert.equal(published.length, 1);
});

test('given no watch events, when the periodic rescan runs, then the change is still picked up', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews'));
  const { provider } = await startProvider(t, dir, { rescanIntervalMs: 100, watch: false });
  await writeFile(path.join(dir, 'b.yaml'), serviceYaml('ratings'));
  await waitFor(() => provider.current?.generation === 2, { timeoutMs: 5000 });
  assert.deepEqual(names(provider.current), ['Service/bookinfo/ratings', 'Service/bookinfo/reviews']);
});

test('given a ConfigMap-like layout (symlinks into a dot-directory), when scanned, then each manifest is read once through its link', async (t) => {
  const dir = await tempDir(t);
  await mkdir(path.join(dir, '..2026_01_01'));
  await writeFile(path.join(dir, '..2026_01_01', 'a.yaml'), serviceYaml('reviews'));
  await symlink('..2026_01_01', path.join(dir, '..data'));
  await symlink(path.join('..data', 'a.yaml'), path.join(dir, 'a.yaml'));
  const { provider } = await startProvider(t, dir);
  assert.deepEqual(names(provider.current), ['Service/bookinfo/reviews']);
  assert.deepEqual(provider.problems, []);
});

test('given a manifests dir that does not exist, when the provider starts, then it fails naming --manifests-dir', async (t) => {
  const dir = await tempDir(t);
  const { logger } = captureLogger();
  const provider = new FileDiscoveryProvider({
    cluster: 'east',
    manifestsDir: path.join(dir, 'missing'),
    validate: validateInputResource,
    logger,
  });
  await assert.rejects(
    provider.start(),
    (err: unknown) =>
      err instanceof MeshrelayError &&
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      err.message.includes('--manifests-dir'),
  );
});

test('given a manifest replaced by rename again and again, staged in its directory or elsewhere, then every replacement is noticed by the watch', async (t) => {
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'team'));
  await writeFile(path.join(dir, 'svc.yaml'), serviceYaml('svc-0'));
  await writeFile(path.join(dir, 'team', 'svc.yaml'), serviceYaml('team-0'));
  const { published } = await startProvider(t, dir);
  await waitFor(() => published.length >= 1, { timeoutMs: 5_000, message: 'no first snapshot' });
  const outside = await tempDir(t);
  for (let i = 1; i <= 6; i++) {
    // Editors stage the new file beside the old one; other tools stage it elsewhere on the same filesystem.
    for (const [sub, name] of [
      ['', 'svc'],
      ['team', 'team'],
    ] as const) {
      const staged = path.join(i % 2 === 0 ? outside : path.join(dir, sub), `.${name}.${i}.tmp`);
      await writeFile(staged, serviceYaml(`${name}-${i}`));
      await rename(staged, path.join(dir, sub, 'svc.yaml'));
      await waitFor(() => names(published.at(-1)).includes(`Service/bookinfo/${name}-${i}`), {
        timeoutMs: 5_000,
        message: `replacement ${i} of ${sub || '.'}/svc.yaml was not noticed (last: ${names(published.at(-1)).join(', ')})`,
      });
    }
  }
});
