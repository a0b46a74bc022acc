// The agent's mesh trust against the real management server (in-process, real gRPC over mTLS) with a
// RootTrustPolicy in force: cacerts written and checked with openssl, workload certificates issued, a
// root rotation followed with a new key, and the last good intermediate kept while the server is away.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { waitFor, type FakeKubeRequest } from '@meshrelay/testkit';
import { Agent } from '../src/agent.ts';
import { parseAgentConfig, type AgentConfig } from '../src/config.ts';
import type { MeshTrustStatus } from '../src/trust/mesh-trust-client.ts';
import { certificateBlocks, certificateId } from '../src/trust/cacerts.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';
import { startFakeKube } from './support/kube.ts';
import { startRelay, type RelayUnderTest } from './support/relay-harness.ts';

const run = promisify(execFile);
const TIMEOUT = { timeout: 180_000 };

const POLICY = `apiVersion: admin.gloo.solo.io/v2
kind: RootTrustPolicy
metadata:
  name: root
  namespace: gloo-mesh
spec:
  config:
    mgmtServerCa:
      generated:
        rsaKeySizeBytes: 2048
    intermediateCertOptions:
      ttlDays: 7
      rsaKeySizeBytes: 2048
      orgName: acme
      secretRotationGracePeriodRatio: 0.2
`;

const POD = `apiVersion: v1
kind: Pod
metadata: { name: reviews-1, namespace: bookinfo }
spec: { serviceAccountName: reviews, nodeName: node-1 }
status: { phase: Running, podIP: 10.0.0.7 }
---
apiVersion: v1
kind: Pod
metadata: { name: web-1, namespace: shop }
spec: { nodeName: node-1 }
status: { phase: Running, podIP: 10.0.0.8 }
`;

async function trustedRelay(t: TestContext): Promise<RelayUnderTest> {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'policy.yaml'), POLICY);
  return startRelay(t, { flags: ['--root-trust-policy', path.join(dir, 'policy.yaml'), '--trust-tick', '100ms'] });
}

async function configFor(t: TestContext, relay: RelayUnderTest, root?: string): Promise<AgentConfig> {
  const dir = root ?? (await tempDir(t));
  await mkdir(path.join(dir, 'manifests'), { recursive: true });
  await writeFile(path.join(dir, 'manifests', 'pods.yaml'), POD);
  await writeFile(path.join(dir, 'ca.pem'), relay.caPem);
  return parseAgentConfig([
    ...['--cluster', 'east', '--server-address', relay.address, '--token', relay.token],
    ...['--root-ca-file', path.join(dir, 'ca.pem'), '--manifests-dir', path.join(dir, 'manifests')],
    ...['--output-dir', path.join(dir, 'output'), '--state-dir', path.join(dir, 'state')],
    ...['--health-port', '0', '--access-log-port', '0', '--debounce-ms', '20'],
    ...['--heartbeat-interval', '100', '--heartbeat-timeout', '600'],
    ...['--trust-interval', '1s', '--workload-cert-ttl', '6s'],
  ]);
}

async function startAgent(t: TestContext, config: AgentConfig) {
  const { logger, lines } = captureLogger();
  const agent = new Agent(config, logger, {
    backoff: { baseMs: 20, capMs: 200 },
    defaultMetrics: false,
    healthHost: '127.0.0.1',
  });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= agent.stop());
  t.after(stop);
  await agent.start();
  const trust = () => agent.status().meshTrust as MeshTrustStatus;
  const metrics = async () => (await fetch(`http://127.0.0.1:${agent.healthPort}/metrics`)).text();
  return { agent, lines, trust, stop, metrics };
}

function cacertsDir(config: AgentConfig): string {
  return path.join(config.stateDir, 'cacerts');
}

async function readCacerts(config: AgentConfig): Promise<Record<string, string>> {
  const dir = cacertsDir(config);
  const names = (await readdir(dir)).filter((n) => n.endsWith('.pem')).sort();
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await readFile(path.join(dir, n), 'utf8')])));
}

/** openssl verify -x509_strict of `leafFile` (its chain after the first certificate) against `bundleFile`. */
async function opensslVerify(dir: string, bundlePem: string, chainPem: string): Promise<void> {
  const [leaf, ...untrusted] = certificateBlocks(chainPem);
  await writeFile(path.join(dir, 'bundle.pem'), bundlePem);
  await writeFile(path.join(dir, 'leaf.pem'), leaf ?? '');
  await writeFile(path.join(dir, 'untrusted.pem'), untrusted.join('') || (leaf ?? ''));
  const args = ['verify', '-x509_strict', '-CAfile', path.join(dir, 'bundle.pem')];
  if (untrusted.length > 0) args.push('-untrusted', path.join(dir, 'untrusted.pem'));
  const { stdout } = await run('openssl', [...args, path.join(dir, 'leaf.pem')]);
  assert.match(stdout, /: OK/);
}

async function serverGeneration(
  relay: RelayUnderTest,
): Promise<{ generation: number; phase: number; bundle: string[] }> {
  const res = await fetch(`http://127.0.0.1:${relay.server.httpPort}/api/v1/trust`, {
    headers: { authorization: `Bearer ${relay.server.admin.token}` },
  });
  const body = (await res.json()) as { generation?: number; phase?: number; bundleRootIds?: string[] };
  return { generation: body.generation ?? 0, phase: body.phase ?? 0, bundle: body.bundleRootIds ?? [] };
}

test(
  'cacerts: the four files, a chain openssl verifies, a key the server never saw; workload certificates per ServiceAccount',
  TIMEOUT,
  async (t) => {
    const relay = await trustedRelay(t);
    const config = await configFor(t, relay);
    const { trust, metrics } = await startAgent(t, config);
    await waitFor(
      async () =>
        trust().appliedGeneration > 0 && (await serverGeneration(relay)).generation === trust().appliedGeneration,
      {
        timeoutMs: 60_000,
        message: 'the agent applies and reports the generation',
      },
    );
    const files = await readCacerts(config);
    assert.deepEqual(Object.keys(files), ['ca-cert.pem', 'ca-key.pem', 'cert-chain.pem', 'root-cert.pem']);
    const intermediate = new X509Certificate(files['ca-cert.pem'] ?? '');
    assert.equal(intermediate.ca, true);
    assert.equal(intermediate.subjectAltName, 'URI:spiffe://cluster.local');
    const work = await tempDir(t);
    await opensslVerify(work, files['root-cert.pem'] ?? '', files['cert-chain.pem'] ?? '');

    // The key is generated here: nothing the server stored holds it.
    // (A line from the middle: PKCS#8 keys of one size share their first bytes.)
    const keyLine = (files['ca-key.pem'] ?? '').split('\n')[8] ?? '';
    assert.equal(keyLine.length, 64);
    const stored = await run('grep', ['-rlF', '--', keyLine, relay.stateDir]).catch(() => ({ stdout: '' }));
    assert.equal(stored.stdout, '', 'the intermediate key is nowhere in the server state');

    // Workload certificates: one per ServiceAccount, `default` for a Pod that names none.
    const certDir = path.join(config.stateDir, 'workload-certs');
    for (const [ns, sa] of [
      ['bookinfo', 'reviews'],
      ['shop', 'default'],
    ] as const) {
      const chain = await readFile(path.join(certDir, ns, sa, 'certificate.pem'), 'utf8');
      const leaf = new X509Certificate(certificateBlocks(chain)[0] ?? '');
      assert.equal(leaf.subjectAltName, `URI:spiffe://cluster.local/ns/${ns}/sa/${sa}`);
      assert.ok(leaf.checkPrivateKey(await readKey(path.join(certDir, ns, sa, 'private_key.pem'))));
      await opensslVerify(work, await readFile(path.join(certDir, ns, sa, 'ca_certificate.pem'), 'utf8'), chain);
    }
    const text = await metrics();
    assert.match(text, /relay_agent_mesh_intermediate_not_after_seconds\{cluster="east"\} [1-9]/);
    assert.match(text, /relay_agent_mesh_workload_certs\{cluster="east"\} 2/);
  },
);

async function readKey(file: string) {
  const { createPrivateKey } = await import('node:crypto');
  return createPrivateKey(await readFile(file, 'utf8'));
}

test(
  'rotation: the bundle gains the new root, a new key is signed by it, the old root goes; workloads follow',
  TIMEOUT,
  async (t) => {
    const relay = await trustedRelay(t);
    const config = await configFor(t, relay);
    const { trust } = await startAgent(t, config);
    await waitFor(() => trust().appliedGeneration > 0, { timeoutMs: 60_000, message: 'first generation applied' });
    const before = await readCacerts(config);
    const oldRoot = trust().signingRootId as string;
    const res = await fetch(`http://127.0.0.1:${relay.server.httpPort}/api/v1/trust/rotate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${relay.server.admin.token}` },
    });
    assert.ok(res.ok, `rotate: ${res.status} ${await res.text()}`);
    const seenBundles = new Set<string>();
    const work = await tempDir(t);
    await waitFor(
      async () => {
        const now = await readCacerts(config).catch(() => undefined);
        if (now?.['root-cert.pem'])
          seenBundles.add(certificateBlocks(now['root-cert.pem']).map(certificateId).join(','));
        const server = await serverGeneration(relay);
        return (
          server.phase === 0 &&
          server.bundle.length === 1 &&
          server.bundle[0] !== oldRoot &&
          trust().appliedGeneration === server.generation
        );
      },
      { timeoutMs: 120_000, intervalMs: 100, message: 'the rotation finishes' },
    );
    const after = await readCacerts(config);
    const newRoot = trust().signingRootId as string;
    assert.notEqual(newRoot, oldRoot);
    assert.notEqual(after['ca-key.pem'], before['ca-key.pem'], 'a new key for the new intermediate');
    assert.deepEqual(certificateBlocks(after['root-cert.pem'] ?? '').map(certificateId), [newRoot]);
    assert.ok(seenBundles.has(`${oldRoot},${newRoot}`), `saw ${[...seenBundles].join(' | ')}`);
    await opensslVerify(work, after['root-cert.pem'] ?? '', after['cert-chain.pem'] ?? '');
    const chain = await readFile(
      path.join(config.stateDir, 'workload-certs', 'bookinfo', 'reviews', 'certificate.pem'),
      'utf8',
    );
    await opensslVerify(work, after['root-cert.pem'] ?? '', chain);
  },
);

test('server away: a restarted agent loads cacerts and still issues workload certificates', TIMEOUT, async (t) => {
  const relay = await trustedRelay(t);
  const root = await tempDir(t);
  const config = await configFor(t, relay, root);
  const first = await startAgent(t, config);
  await waitFor(() => first.trust().appliedGeneration > 0, { timeoutMs: 60_000, message: 'first generation applied' });
  const written = await readCacerts(config);
  await first.stop();
  relay.proxy.setDown(true);
  await rm(path.join(config.stateDir, 'workload-certs'), { recursive: true, force: true });

  const second = await startAgent(t, config);
  const certFile = path.join(config.stateDir, 'workload-certs', 'bookinfo', 'reviews', 'certificate.pem');
  await waitFor(async () => (await readFile(certFile, 'utf8').catch(() => '')) !== '', {
    timeoutMs: 30_000,
    message: 'a workload certificate issued with the server down',
  });
  assert.deepEqual(await readCacerts(config), written, 'cacerts as they were');
  assert.equal(
    second.trust().intermediate?.signingRootId,
    certificateId(certificateBlocks(written['cert-chain.pem'] ?? '')[1] ?? ''),
  );
  const work = await tempDir(t);
  await opensslVerify(work, written['root-cert.pem'] ?? '', await readFile(certFile, 'utf8'));
});

test(
  'cacerts in the Secret: a write that fails writes nothing, shows the error, holds the rotation',
  TIMEOUT,
  async (t) => {
    const relay = await trustedRelay(t);
    const root = await tempDir(t);
    const { server: kube } = await startFakeKube(t);
    await writeFile(path.join(root, 'kubeconfig'), kube.kubeConfigYaml());
    const base = await configFor(t, relay, root);
    const config = parseAgentConfig([
      ...['--cluster', 'east', '--server-address', relay.address, '--token', relay.token],
      ...['--root-ca-file', path.join(root, 'ca.pem'), '--manifests-dir', path.join(root, 'manifests')],
      ...['--apply', 'kubernetes', '--kubeconfig', path.join(root, 'kubeconfig'), '--state-dir', base.stateDir],
      ...['--health-port', '0', '--access-log-port', '0', '--debounce-ms', '20'],
      ...['--heartbeat-interval', '100', '--heartbeat-timeout', '600', '--trust-interval', '1s'],
      ...['--workload-cert-ttl', '6s'],
    ]);
    const { trust, metrics } = await startAgent(t, config);
    await waitFor(() => trust().appliedGeneration > 0, { timeoutMs: 60_000, message: 'first generation applied' });
    const secret = () => JSON.stringify(kube.get('Secret', 'cacerts', 'istio-system')?.['data']);
    const applied = trust().appliedGeneration;
    const held = secret();

    let failing = true;
    const writes = (r: FakeKubeRequest) =>
      failing && (r.method === 'PUT' || r.method === 'POST') && r.path.includes('/namespaces/istio-system/secrets');
    kube.failNext(1_000_000, 500, { match: writes });
    const rotated = await fetch(`http://127.0.0.1:${relay.server.httpPort}/api/v1/trust/rotate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${relay.server.admin.token}` },
    });
    assert.ok(rotated.ok);
    await waitFor(() => trust().lastError?.stage === 'cacerts', {
      timeoutMs: 60_000,
      message: 'the write error shows',
    });
    assert.equal(secret(), held, 'the Secret as it was');
    assert.equal(trust().appliedGeneration, applied, 'a generation not written is not reported');
    assert.match(await metrics(), /relay_agent_mesh_trust_errors_total\{stage="cacerts",cluster="east"\} [1-9]/);
    assert.equal((await serverGeneration(relay)).phase, 1, 'the rotation waits for this cluster');

    failing = false;
    await waitFor(async () => (await serverGeneration(relay)).phase === 0 && trust().lastError === undefined, {
      timeoutMs: 120_000,
      message: 'the rotation finishes once writes work again',
    });
    assert.notEqual(secret(), held);
  },
);
