import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { InputSnapshot } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { validateInputResource } from '@meshrelay/translator';
import { FileDiscoveryProvider } from '../src/discovery/file-provider.ts';
import type { ManifestLimits } from '../src/discovery/manifest-reader.ts';
import { captureLogger, serviceYaml, tempDir } from './support/fixtures.ts';

async function startProvider(t: TestContext, dir: string, limits: Partial<ManifestLimits> = {}) {
  const { logger } = captureLogger();
  const provider = new FileDiscoveryProvider({
    cluster: 'east',
    manifestsDir: dir,
    validate: validateInputResource,
    logger,
    debounceMs: 50,
    rescanIntervalMs: 60_000,
    epoch: 'e',
    limits,
  });
  await provider.start();
  t.after(() => provider.stop());
  return provider;
}

function names(snapshot: InputSnapshot | undefined): string[] {
  return (snapshot?.resources ?? []).map((r) => r.metadata.name);
}

const DEEP_YAML = `${'['.repeat(2000)}${']'.repeat(2000)}\n`;

test('given a deeply nested YAML file, when the provider starts, then it names the file and publishes every other resource', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'deep.yaml'), DEEP_YAML);
  await writeFile(path.join(dir, 'good.yaml'), serviceYaml('reviews'));
  const provider = await startProvider(t, dir);
  assert.deepEqual(names(provider.current), ['reviews']);
  assert.deepEqual(provider.problems, [
    { file: 'deep.yaml', document: -1, path: '', message: 'nests too deeply to be parsed' },
  ]);
});

test('given a running provider, when a deeply nested file appears, then later changes are still published', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'good.yaml'), serviceYaml('reviews'));
  const provider = await startProvider(t, dir);
  await writeFile(path.join(dir, 'deep.yaml'), DEEP_YAML);
  await waitFor(() => provider.problems.some((p) => p.file === 'deep.yaml'), { timeoutMs: 5000 });
  await writeFile(path.join(dir, 'more.yaml'), serviceYaml('ratings'));
  await waitFor(() => names(provider.current).includes('ratings'), { timeoutMs: 5000 });
  assert.deepEqual(names(provider.current), ['ratings', 'reviews']);
});

test('given an object nested deeper than 64 levels, when scanned, then that document is refused naming the depth', async (t) => {
  const dir = await tempDir(t);
  const nested = `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`;
  await writeFile(
    path.join(dir, 'deep.json'),
    `[{"apiVersion":"v1","kind":"Service","metadata":{"name":"x","namespace":"y"},"spec":${nested}}]`,
  );
  const provider = await startProvider(t, dir);
  assert.deepEqual(provider.problems, [
    { file: 'deep.json', document: 0, path: '', message: 'nests objects and arrays deeper than 64 levels' },
  ]);
  assert.deepEqual(names(provider.current), []);
});

test('given a file over the per-file limit, when scanned, then it is refused naming the file and the limit, and the rest goes up', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'big.yaml'), `${serviceYaml('big')}# ${'x'.repeat(4096)}\n`);
  await writeFile(path.join(dir, 'small.yaml'), serviceYaml('reviews'));
  const provider = await startProvider(t, dir, { maxFileBytes: 2048 });
  assert.deepEqual(names(provider.current), ['reviews']);
  assert.equal(provider.problems.length, 1);
  assert.equal(provider.problems[0]?.file, 'big.yaml');
  assert.match(
    provider.problems[0]?.message ?? '',
    /larger than the limit of 2048 bytes per file \(--max-manifest-file-bytes\)/,
  );
  assert.equal(provider.filesRead, 1, 'the large file is refused from its stat, never read');
});

test('given files over the directory limit, when scanned, then the files past it in path order are refused by name', async (t) => {
  const dir = await tempDir(t);
  for (const name of ['a', 'b', 'c'])
    await writeFile(path.join(dir, `${name}.yaml`), `${serviceYaml(name)}# ${'x'.repeat(900)}\n`);
  const provider = await startProvider(t, dir, { maxTotalBytes: 2500 });
  assert.deepEqual(names(provider.current), ['a', 'b']);
  assert.deepEqual(
    provider.problems.map((p) => p.file),
    ['c.yaml'],
  );
  assert.match(provider.problems[0]?.message ?? '', /past the limit of 2500 bytes in total \(--max-manifests-bytes\)/);
});

test('given a file that grows past the limit, when rescanned, then its last good resources stay and the file is reported', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.yaml'), serviceYaml('reviews'));
  const provider = await startProvider(t, dir, { maxFileBytes: 2048 });
  const before = provider.current?.hash;
  await writeFile(path.join(dir, 'a.yaml'), `${serviceYaml('reviews', 9090)}# ${'x'.repeat(4096)}\n`);
  await provider.rescan();
  assert.equal(provider.current?.hash, before);
  assert.match(provider.problems[0]?.message ?? '', /larger than the limit/);
});

test('given bytes that are not UTF-8, when scanned, then the file is refused naming it, never decoded with replacements', async (t) => {
  const dir = await tempDir(t);
  const text = Buffer.from(serviceYaml('reviews').replace('app: reviews', 'app: revi\u0001ws'));
  text[text.indexOf(0x01)] = 0xff;
  await writeFile(path.join(dir, 'latin1.yaml'), text);
  await writeFile(path.join(dir, 'good.yaml'), serviceYaml('ratings'));
  const provider = await startProvider(t, dir);
  assert.deepEqual(names(provider.current), ['ratings']);
  assert.deepEqual(provider.problems, [
    { file: 'latin1.yaml', document: -1, path: '', message: 'is not valid UTF-8 text' },
  ]);
});

test('given a symlink that leads outside the manifests dir, when scanned, then it is reported by its name and followed only with --follow-external-symlinks', async (t) => {
  const root = await tempDir(t);
  await mkdir(path.join(root, 'manifests'));
  await writeFile(path.join(root, 'outside.yaml'), serviceYaml('outside'));
  await symlink(path.join(root, 'outside.yaml'), path.join(root, 'manifests', 'link.yaml'));
  await writeFile(path.join(root, 'manifests', 'good.yaml'), serviceYaml('reviews'));
  const provider = await startProvider(t, path.join(root, 'manifests'));
  assert.deepEqual(names(provider.current), ['reviews']);
  assert.equal(provider.problems[0]?.file, 'link.yaml');
  assert.match(
    provider.problems[0]?.message ?? '',
    /symbolic link that leads outside the manifests dir; not followed \(see --follow-external-symlinks\)/,
  );
  const following = await startProvider(t, path.join(root, 'manifests'), { followExternalSymlinks: true });
  assert.deepEqual(names(following.current), ['outside', 'reviews']);
  assert.deepEqual(following.problems, []);
});

test('given unparseable files holding secrets, when scanned, then the problems keep file, line, column and reason but never the text', async (t) => {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'a.json'), '{"password": "hunter2" "token": 1}');
  await writeFile(path.join(dir, 'b.yaml'), 'apiVersion: v1\nkind: Secret\ndata: *s3cr3t-anchor\n');
  await writeFile(path.join(dir, 'c.yaml'), 'password: opensesame\npassword: opensesame2\n');
  const provider = await startProvider(t, dir);
  const text = JSON.stringify(provider.problems);
  for (const secret of ['hunter2', 's3cr3t', 'opensesame'])
    assert.ok(!text.includes(secret), `problems quote "${secret}": ${text}`);
  assert.deepEqual(
    provider.problems.map((p) => `${p.file}: ${p.message}`),
    [
      'a.json: not valid JSON: unexpected input at line 1, column 24',
      'b.yaml: not valid YAML: an unresolved alias, or more aliases than allowed',
      'c.yaml: not valid YAML: duplicate key at line 2, column 1',
    ],
  );
});
