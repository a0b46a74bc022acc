// The admin credential is created on first start in the durable state unless given: a 0600 file
// in the state directory, or a Secret with the kubernetes registry; replicas sharing the state end
// with one; the log says where it is, never what it is.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import { ensureFileAdminToken } from '../src/admin-credential.ts';
import { parseServerConfig } from '../src/config.ts';
import { ADMIN_TOKEN_SECRET, ensureSecretAdminToken } from '../src/kubernetes-admin-credential.ts';
import { registryApis } from '@meshrelay/registry';
import { startManagementServer } from '../src/server.ts';
import { bearer, startTestServer } from './harness.ts';
import { NS, kubeConfigFile, kubeConfigOf, startFakeKube } from '../../registry/test/kube-harness.ts';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-admin-'));
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  return dir;
}

const BASE_FLAGS = [
  '--relay-host',
  '127.0.0.1',
  '--relay-port',
  '0',
  '--http-port',
  '0',
  '--metrics-port',
  '0',
  '--safe-start-window',
  '0',
];

function secretToken(fake: Awaited<ReturnType<typeof startFakeKube>>): string | undefined {
  const data = fake.get('Secret', ADMIN_TOKEN_SECRET, NS)?.['data'] as Record<string, string> | undefined;
  return data?.['token'] === undefined ? undefined : Buffer.from(data['token'], 'base64').toString('utf8');
}

test('given a fresh state directory, when the server starts, then it creates admin-token there: mode 0600, 32 random bytes, and the API takes it', async (t) => {
  const server = await startTestServer(t);
  const path = join(server.stateDir, 'admin-token');
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const token = readFileSync(path, 'utf8').trim();
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(Buffer.from(token, 'base64url').length, 32);
  const res = await fetch(`${server.api}/api/v1/clusters`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
});

test('given a state directory with a credential, when the server restarts on it, then the credential stays the same', async (t) => {
  const stateDir = tempDir(t);
  const first = await startTestServer(t, ['--state-dir', stateDir]);
  const token = first.admin.token;
  await first.stop();
  const second = await startTestServer(t, ['--state-dir', stateDir]);
  assert.equal(second.admin.token, token);
});

test('given replicas sharing a state directory, when they create the credential at the same moment, then all end with one (5 runs)', async (t) => {
  for (let run = 0; run < 5; run++) {
    const dir = tempDir(t);
    const credentials = await Promise.all([0, 1, 2, 3].map(() => ensureFileAdminToken(dir)));
    assert.equal(new Set(credentials.map((c) => c.token)).size, 1, `run ${run}`);
    assert.equal(readFileSync(join(dir, 'admin-token'), 'utf8').trim(), credentials[0]?.token);
  }
});

test('given a server starting, when it logs, then it names where the credential is and never prints it', async (t) => {
  const stateDir = tempDir(t);
  let logged = '';
  const sink = new Writable({
    write: (chunk: Buffer, _enc, done) => {
      logged += chunk.toString();
      done();
    },
  });
  const server = await startManagementServer(
    parseServerConfig([...BASE_FLAGS, '--state-dir', stateDir], {}),
    pino({ level: 'info' }, sink),
  );
  t.after(() => server.stop());
  assert.match(logged, new RegExp(`"adminToken":"${join(stateDir, 'admin-token').replace(/[/.]/g, '\\$&')}"`));
  assert.equal(logged.includes(server.admin.token), false, 'the token value is in the log');
});

test('given --admin-token-file, when the server starts, then the API takes that token and no credential is created in the state directory', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'mounted-token');
  writeFileSync(file, 'from-a-mounted-secret-0123456789\n', { mode: 0o600 });
  const server = await startTestServer(t, ['--admin-token-file', file]);
  assert.equal(server.admin.token, 'from-a-mounted-secret-0123456789');
  assert.equal((await fetch(`${server.api}/api/v1/clusters`, { headers: bearer(server) })).status, 200);
  assert.throws(() => statSync(join(server.stateDir, 'admin-token')), /ENOENT/);
});

test('given an --admin-token-file that is missing or too short, when the server starts, then it refuses naming the file', async (t) => {
  const dir = tempDir(t);
  const short = join(dir, 'short');
  writeFileSync(short, 'abc');
  for (const file of [join(dir, 'absent'), short]) {
    await assert.rejects(
      startTestServer(t, ['--admin-token-file', file]),
      (e: unknown) =>
        e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_INVALID_CONFIG' && e.message.includes(file),
    );
  }
});

test('given the kubernetes registry, when the server starts, then it keeps the credential in the Secret meshrelay-admin-token', async (t) => {
  const fake = await startFakeKube(t);
  const server = await startTestServer(t, ['--registry', 'kubernetes', '--kubeconfig', kubeConfigFile(t, fake)]);
  assert.equal(secretToken(fake), server.admin.token);
  assert.match(server.admin.token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(server.admin.location, `Secret ${NS}/${ADMIN_TOKEN_SECRET} (key token)`);
  assert.throws(() => statSync(join(server.stateDir, 'admin-token')), /ENOENT/);
});

test('given two kubernetes-mode replicas started at the same moment, when both create the credential, then they end with one (5 runs)', async (t) => {
  for (let run = 0; run < 5; run++) {
    const fake = await startFakeKube(t);
    const kubeconfig = kubeConfigFile(t, fake);
    const [a, b] = await Promise.all(
      ['a', 'b'].map((r) =>
        startTestServer(t, ['--registry', 'kubernetes', '--kubeconfig', kubeconfig, '--replica-name', `${r}-${run}`]),
      ),
    );
    assert.equal(a?.admin.token, b?.admin.token, `run ${run}`);
    assert.equal(secretToken(fake), a?.admin.token);
    await Promise.all([a?.stop(), b?.stop()]);
  }
});

test('given Secret stores racing on one name, when each creates the credential, then every caller gets the winner (5 runs)', async (t) => {
  for (let run = 0; run < 5; run++) {
    const fake = await startFakeKube(t);
    const tokens = await Promise.all(
      [0, 1, 2].map(() => ensureSecretAdminToken(registryApis(kubeConfigOf(fake)).core, NS)),
    );
    assert.equal(new Set(tokens.map((c) => c.token)).size, 1);
  }
});

test('given a Secret meshrelay-admin-token without a usable token, when the server loads it, then it refuses naming the Secret', async (t) => {
  const fake = await startFakeKube(t);
  fake.put({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: ADMIN_TOKEN_SECRET, namespace: NS },
    data: { token: Buffer.from('short').toString('base64') },
  });
  await assert.rejects(
    ensureSecretAdminToken(registryApis(kubeConfigOf(fake)).core, NS),
    (e: unknown) =>
      e instanceof MeshrelayError &&
      e.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      e.message.includes(`${NS}/${ADMIN_TOKEN_SECRET}`),
  );
});
