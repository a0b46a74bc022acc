import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { CA_FILE_NAME, createRootCa, ensureRelayCa, FileCaStore } from '../src/index.ts';

const NOW = new Date('2026-11-22T12:00:00Z');
const FIXTURE = new URL('./fixtures/ensure-ca.ts', import.meta.url);
const fingerprint = (certPem: string) => new X509Certificate(certPem).fingerprint256;
const isCertificateError = (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_CERTIFICATE';

async function freshDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-ca-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Forks the fixture; resolves once it reports ready, with its stdout collected in `output`. */
async function startRacer(t: TestContext, dir: string): Promise<{ child: ChildProcess; output: () => string }> {
  const child = fork(FIXTURE, [dir], { execArgv: [], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  t.after(() => child.kill('SIGKILL'));
  let stdout = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  await once(child, 'message');
  return { child, output: () => stdout.trim() };
}

test('given two processes racing on an empty directory, when both ensure the CA, then both end with the same CA (5 rounds)', async (t) => {
  for (let round = 0; round < 5; round += 1) {
    const dir = await freshDir(t);
    const racers = await Promise.all([startRacer(t, dir), startRacer(t, dir)]);
    const exits = racers.map((r) => once(r.child, 'exit'));
    for (const r of racers) r.child.send('go');
    const codes = (await Promise.all(exits)).map(([code]) => code as number | null);
    assert.deepEqual(codes, [0, 0], `round ${round}: both racers exit cleanly`);
    const [first, second] = racers.map((r) => r.output());
    assert.match(first!, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/, `round ${round}`);
    assert.equal(second, first, `round ${round}: both racers hold the same CA`);
    const stored = await new FileCaStore(dir).load();
    assert.equal(fingerprint(stored!.certPem), first);
    assert.deepEqual(await readdir(dir), [CA_FILE_NAME], `round ${round}: no temp files are left behind`);
  }
});

test('given a stored CA, when another bundle is offered with createIfAbsent, then the stored one is returned and kept', async (t) => {
  const store = new FileCaStore(await freshDir(t));
  const winner = createRootCa({ commonName: 'winner', now: NOW });
  const loser = createRootCa({ commonName: 'loser', now: NOW });
  assert.deepEqual(await store.createIfAbsent(winner), winner);
  assert.deepEqual(await store.createIfAbsent(loser), winner);
  assert.deepEqual(await store.load(), winner);
});

test('given an empty directory, when the CA is ensured twice, then the second call loads the first CA', async (t) => {
  const store = new FileCaStore(await freshDir(t));
  const first = await ensureRelayCa(store, { commonName: 'meshrelay-root', now: NOW });
  const second = await ensureRelayCa(store, { commonName: 'meshrelay-root', now: NOW });
  assert.deepEqual(second, first);
});

test('given a created CA file, when inspected, then only its owner may read it', async (t) => {
  const store = new FileCaStore(await freshDir(t));
  await ensureRelayCa(store, { commonName: 'meshrelay-root', now: NOW });
  assert.equal((await stat(store.path)).mode & 0o777, 0o600);
});

test('given a no-such directory, when load is called, then there is no CA yet', async (t) => {
  const store = new FileCaStore(join(await freshDir(t), 'missing'));
  assert.equal(await store.load(), undefined);
});

test('given a corrupted CA file, when the CA is ensured, then it fails clearly and does not replace the file', async (t) => {
  const store = new FileCaStore(await freshDir(t));
  await writeFile(store.path, '{"certPem": "-----BEGIN CERT', { mode: 0o600 });
  await assert.rejects(
    ensureRelayCa(store, { commonName: 'meshrelay-root', now: NOW }),
    (err: unknown) =>
      isCertificateError(err) && /corrupt/.test((err as Error).message) && (err as Error).message.includes(store.path),
  );
  assert.equal((await stat(store.path)).size, '{"certPem": "-----BEGIN CERT'.length);
});

test('given a CA file whose key belongs to another certificate, when loaded, then it fails clearly', async (t) => {
  const store = new FileCaStore(await freshDir(t));
  const a = createRootCa({ commonName: 'a', now: NOW });
  const b = createRootCa({ commonName: 'b', now: NOW });
  await writeFile(store.path, JSON.stringify({ certPem: a.certPem, keyPem: b.keyPem }), { mode: 0o600 });
  await assert.rejects(
    store.load(),
    (err: unknown) => isCertificateError(err) && /does not belong/.test((err as Error).message),
  );
});
