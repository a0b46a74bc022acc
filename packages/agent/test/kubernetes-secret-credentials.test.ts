import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import { MeshrelayError } from '@meshrelay/api';
import { certificateInfo, createCsr, generateKeyPairAsync } from '@meshrelay/certs';
import { waitFor, type FakeKubeApiServer, type FakeKubeObject, type FakeKubeRequest } from '@meshrelay/testkit';
import { Agent } from '../src/agent.ts';
import { parseAgentConfig } from '../src/config.ts';
import { KubernetesSecretCredentialStore } from '../src/credentials/kubernetes-secret-credential-store.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';
import { service, startFakeKube } from './support/kube.ts';
import { logged, loggedCount, startClient, startRelay, type RelayUnderTest } from './support/relay-harness.ts';
import { issueClientCertificate, testPki } from './support/test-pki.ts';

const SECRET = 'relay-client-tls-secret';
const NS = 'gloo-mesh';

function secretOf(kube: FakeKubeApiServer): FakeKubeObject | undefined {
  return kube.get('Secret', SECRET, NS);
}

function secretText(kube: FakeKubeApiServer, key: string): string | undefined {
  const value = (secretOf(kube)?.['data'] as Record<string, string> | undefined)?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
}

const isSecretWrite =
  (method: string) =>
  (r: FakeKubeRequest): boolean =>
    r.method === method && r.path.startsWith(`/api/v1/namespaces/${NS}/secrets`);

/** An Agent with kubernetes discovery and apply, keeping its credentials in the Secret; a fresh state dir each time. */
async function startAgent(
  t: TestContext,
  kube: FakeKubeApiServer,
  relay: RelayUnderTest,
  name: string,
): Promise<{ agent: Agent; stateDir: string; lines: Array<Record<string, unknown>> }> {
  const root = await tempDir(t);
  await writeFile(path.join(root, 'kubeconfig'), kube.kubeConfigYaml());
  await writeFile(path.join(root, 'ca.pem'), relay.caPem);
  const stateDir = path.join(root, 'state');
  const config = parseAgentConfig([
    '--cluster',
    'east',
    '--server-address',
    relay.address,
    '--token',
    relay.token,
    '--root-ca-file',
    path.join(root, 'ca.pem'),
    '--state-dir',
    stateDir,
    '--discovery-provider',
    'kubernetes',
    '--kubeconfig',
    path.join(root, 'kubeconfig'),
    '--credentials-secret',
    SECRET,
    '--health-port',
    '0',
    '--access-log-port',
    '0',
    '--debounce-ms',
    '20',
    '--replica-id',
    name,
  ]);
  const { logger, lines } = captureLogger();
  const agent = new Agent(config, logger, {
    backoff: { baseMs: 20, capMs: 200 },
    defaultMetrics: false,
    healthHost: '127.0.0.1',
  });
  t.after(() => agent.stop());
  await agent.start();
  return { agent, stateDir, lines };
}

const REGISTERING = /^registering with the relay token$/;

async function kubeWithWorkload(t: TestContext): Promise<FakeKubeApiServer> {
  const { server } = await startFakeKube(t, { namespaces: ['default', 'bookinfo', NS] });
  server.put(service('reviews'));
  return server;
}

function secretStore(kubeConfig: KubeConfig): KubernetesSecretCredentialStore {
  return new KubernetesSecretCredentialStore({
    kubeConfig,
    namespace: NS,
    name: SECRET,
    cluster: 'east',
    logger: captureLogger().logger,
  });
}

test('given --credentials-secret, when the agent registers, then its key, certificate and CA bundle are in an Opaque Secret and not in the state dir', async (t) => {
  const kube = await kubeWithWorkload(t);
  const relay = await startRelay(t);
  const { agent, stateDir, lines } = await startAgent(t, kube, relay, 'east-0');
  await waitFor(() => agent.status().relay.everAccepted, { timeoutMs: 10_000 });

  assert.equal(secretOf(kube)?.['type'], 'Opaque');
  assert.match(secretText(kube, 'tls.key') ?? '', /BEGIN PRIVATE KEY/);
  assert.equal(certificateInfo(secretText(kube, 'tls.crt') ?? '').subjectCN, 'east');
  assert.equal(secretText(kube, 'ca.crt'), relay.caPem);
  assert.equal(loggedCount(lines, REGISTERING), 1);
  const stateFiles = await readdir(stateDir).catch((): string[] => []);
  assert.ok(
    !stateFiles.includes('client-certificate.json') && !stateFiles.includes('client-key.json'),
    `state dir holds ${stateFiles.join(', ')}`,
  );
});

test('given credentials in the Secret, when a second agent with a new state dir starts, then it connects with them without registering', async (t) => {
  const kube = await kubeWithWorkload(t);
  const relay = await startRelay(t);
  const first = await startAgent(t, kube, relay, 'east-0');
  await waitFor(() => first.agent.status().relay.everAccepted, { timeoutMs: 10_000 });
  await first.agent.stop();
  const certificate = secretText(kube, 'tls.crt');

  const second = await startAgent(t, kube, relay, 'east-1');
  await waitFor(() => second.agent.status().relay.everAccepted, { timeoutMs: 10_000 });
  assert.notEqual(second.stateDir, first.stateDir);
  assert.equal(loggedCount([...first.lines, ...second.lines], REGISTERING), 1, 'only the first agent registered');
  assert.equal(secretText(kube, 'tls.crt'), certificate, 'the second agent used the stored certificate');
});

test('given a certificate past two thirds of its lifetime, when the agent renews it, then the Secret holds the renewed certificate', async (t) => {
  const { server: kube, kubeConfig } = await startFakeKube(t);
  // Issued certificates start 60 s in the past; a 31 s remainder leaves less than a third of 91 s within a second.
  const relay = await startRelay(t, { flags: ['--client-cert-lifetime', '31'] });
  const { client, lines } = await startClient(t, [relay], {
    credentials: secretStore(kubeConfig),
    renewCheckIntervalMs: 100,
  });
  await waitFor(() => logged(lines, /client certificate renewed/) && client.status.everAccepted, { timeoutMs: 10_000 });

  const stored = certificateInfo(secretText(kube, 'tls.crt') ?? '');
  assert.equal(
    stored.notAfter.toISOString(),
    client.status.certificateNotAfter,
    'the Secret holds the renewed certificate in use',
  );
  assert.equal(loggedCount(lines, REGISTERING), 1);
});

test('given a Secret changed since it was read, when a certificate is saved and the replace gets 409 Conflict, then the store reads again and the write succeeds', async (t) => {
  const { server: kube, kubeConfig } = await startFakeKube(t);
  const store = secretStore(kubeConfig);
  const keyPair = await store.keyPair();
  const issued = issueClientCertificate(testPki(), createCsr({ ...keyPair, cluster: 'east' }), 'east', 'uid-1', 3600);
  kube.failNext(1, 409, { match: isSecretWrite('PUT') });

  const creds = await store.save(issued.certPem, testPki().ca.certPem);

  assert.equal(
    kube.requests
      .filter(isSecretWrite('PUT'))
      .map((r) => r.status)
      .join(','),
    '409,200',
  );
  assert.equal(secretText(kube, 'tls.crt'), issued.certPem);
  assert.equal(secretText(kube, 'tls.key'), keyPair.privateKeyPem);
  assert.equal((await store.load())?.notAfterMs, creds.notAfterMs);
});

test('given no Secret yet, when another replica creates it first and the create gets 409 AlreadyExists, then the store reads again and keeps the key it finds', async (t) => {
  const { server: kube, kubeConfig } = await startFakeKube(t);
  const theirs = await generateKeyPairAsync();
  // The other replica's create lands just before ours: the fake answers ours with 409, as the real server would.
  kube.failNext(1, 409, {
    match: (r) => {
      if (!isSecretWrite('POST')(r)) return false;
      kube.put({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: SECRET, namespace: NS },
        type: 'Opaque',
        data: { 'tls.key': Buffer.from(theirs.privateKeyPem).toString('base64') },
      });
      return true;
    },
  });

  const keyPair = await secretStore(kubeConfig).keyPair();

  assert.equal(kube.requests.filter(isSecretWrite('POST')).length, 1);
  assert.equal(keyPair.privateKeyPem, theirs.privateKeyPem);
  assert.equal(secretText(kube, 'tls.key'), theirs.privateKeyPem);
});

test('given stored credentials, when they are dropped, then the certificate is gone and the key is kept', async (t) => {
  const { server: kube, kubeConfig } = await startFakeKube(t);
  const store = secretStore(kubeConfig);
  const keyPair = await store.keyPair();
  const issued = issueClientCertificate(testPki(), createCsr({ ...keyPair, cluster: 'east' }), 'east', 'uid-1', 3600);
  await store.save(issued.certPem, testPki().ca.certPem);

  await store.drop();

  assert.equal(await store.load(), undefined);
  assert.equal(secretText(kube, 'tls.crt'), undefined);
  assert.equal(secretText(kube, 'tls.key'), keyPair.privateKeyPem);
});

test('given a --credentials-secret that is not an object name, when the config is parsed, then the error names the flag', () => {
  assert.throws(
    () =>
      parseAgentConfig([
        '--cluster',
        'east',
        '--state-dir',
        '/tmp/x',
        '--manifests-dir',
        '/tmp/m',
        '--output-dir',
        '/tmp/o',
        '--credentials-secret',
        'Bad_Name',
      ]),
    (err: unknown) =>
      err instanceof MeshrelayError &&
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      err.message.includes('--credentials-secret: "Bad_Name"'),
  );
});
