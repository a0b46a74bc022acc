// A whole mesh root rotation under traffic: a real management server with a generated
// RootTrustPolicy, two real agents that get their intermediates over the relay and write
// workload certificates (20 s, so the old-root leaves expire within the test), an XdsServer
// backend in cluster-a and a grpc-js-xds client in cluster-b calling it over mTLS every 50 ms,
// on a new connection (a new TLS handshake) every 20 calls. No call may fail while the roots
// change through phases 1, 2, 3 and back to steady. Then a Gloo AccessPolicy, translated by the
// server into PeerAuthentication + AuthorizationPolicy, becomes the backend's TLS and RBAC; and
// no client or server NACKed anything, as the agents report it.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { freePort, spawnProcess, waitFor } from '@meshrelay/testkit';
import { meshctlAt } from '../meshctl/harness.ts';
import { Mesh } from '../mesh.ts';
import { workloadBootstrap } from './mesh-certs.ts';
import { WHO_PATH } from './who.ts';
import { NAMESPACE, SERVICE_PORT, serviceYaml, type Picks } from './world.ts';

const HERE = import.meta.dirname;
const HOST = 'ratings.global';
const BACKEND_OCTET = 91;
const BACKEND_IP = `127.0.0.${BACKEND_OCTET}`;

const POLICY = `apiVersion: admin.gloo.solo.io/v2
kind: RootTrustPolicy
metadata: { name: root, namespace: gloo-mesh }
spec:
  config:
    mgmtServerCa: { generated: { rsaKeySizeBytes: 2048 } }
    intermediateCertOptions: { rsaKeySizeBytes: 2048, ttlDays: 1 }
`;

const DESTINATION = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: { name: ratings-global, namespace: ${NAMESPACE} }
spec:
  hosts: [${HOST}]
  services: [{ name: ratings, namespace: ${NAMESPACE} }]
  ports: [{ number: ${SERVICE_PORT}, protocol: GRPC }]
`;

interface TrustView {
  readonly phase?: number;
  readonly generation?: number;
  readonly roots: readonly { readonly id: string }[];
}

const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);

function plaintextCall(address: string): Promise<boolean> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      WHO_PATH,
      () => Buffer.from('{}'),
      (b: Buffer) => b,
      {},
      new grpc.Metadata(),
      { deadline: Date.now() + 2_000 },
      (err) => {
        client.close();
        resolve(!err);
      },
    );
  });
}

test('a root rotation under steady mTLS traffic between clusters', { timeout: 600_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-rotation-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  const mesh = await Mesh.start(t, {
    serverFlags: ['--root-trust-policy', join(dir, 'policy.yaml'), '--trust-tick', '200ms'],
  });
  const server = await mesh.startServer();
  const xdsPorts = new Map<string, number>();
  const agents = new Map<string, Awaited<ReturnType<Mesh['startAgent']>>>();
  for (const cluster of ['cluster-a', 'cluster-b']) await mesh.register(cluster);
  for (const cluster of ['cluster-a', 'cluster-b']) {
    xdsPorts.set(cluster, await freePort());
    const flags = ['--xds-port', String(xdsPorts.get(cluster)), '--trust-interval', '1s', '--workload-cert-ttl', '20s'];
    const agent = await mesh.startAgent(cluster, { extraFlags: flags });
    await agent.proc.waitForLine(/xds server listening/, 30_000);
    agents.set(cluster, agent);
  }
  const backendPort = await freePort();
  const workload = (cluster: string, version: string, octet: number, service: string) => ({
    service,
    cluster,
    version,
    octet,
  });
  mesh.writeManifest(
    'cluster-a',
    'svc-ratings.yaml',
    serviceYaml('ratings', 'cluster-a', [workload('cluster-a', 'v1', BACKEND_OCTET, 'ratings')], backendPort),
  );
  mesh.writeManifest('cluster-a', 'ratings-global.yaml', DESTINATION);
  // The caller's Pod, so cluster-b's agent issues a certificate for its service account.
  mesh.writeManifest(
    'cluster-b',
    'svc-reviews.yaml',
    serviceYaml('reviews', 'cluster-b', [workload('cluster-b', 'v1', 92, 'reviews')], backendPort),
  );
  const certDir = (cluster: string, sa: string): string =>
    join(agents.get(cluster)?.stateDir ?? '', 'workload-certs', NAMESPACE, sa);
  await waitFor(
    () =>
      existsSync(join(certDir('cluster-a', 'ratings'), 'certificate.pem')) &&
      existsSync(join(certDir('cluster-b', 'reviews'), 'certificate.pem')),
    { timeoutMs: 120_000, intervalMs: 250, message: 'the agents never wrote workload certificates' },
  );

  const backend = await spawnProcess({
    name: 'xds-backend-ratings',
    command: process.execPath,
    args: [
      join(HERE, 'xds-backend.ts'),
      JSON.stringify({ cluster: 'cluster-a', version: 'v1', locality: '{}', address: BACKEND_IP }),
      String(backendPort),
    ],
    env: {
      GRPC_XDS_EXPERIMENTAL_RBAC: 'true',
      GRPC_XDS_BOOTSTRAP_CONFIG: workloadBootstrap(
        xdsPorts.get('cluster-a') ?? 0,
        `sidecar~${BACKEND_IP}~ratings-v1-${BACKEND_OCTET}.${NAMESPACE}~${NAMESPACE}.svc.cluster.local`,
        certDir('cluster-a', 'ratings'),
      ),
    },
  });
  t.after(() => backend.stop());
  await backend.waitForLine(/backend listening/, 60_000);
  // Mesh TLS is on in cluster-a once its server Listener refuses plaintext.
  await waitFor(async () => !(await plaintextCall(`${BACKEND_IP}:${backendPort}`)), {
    timeoutMs: 60_000,
    intervalMs: 250,
    message: 'the backend never served TLS',
  });

  const client = await spawnProcess({
    name: 'client-cluster-b',
    command: process.execPath,
    args: [join(HERE, 'client.ts'), `xds:///${HOST}:${SERVICE_PORT}`, 'forever'],
    env: {
      CLIENT_XDS_CREDENTIALS: '1',
      CLIENT_PACE_MS: '50',
      CLIENT_RECONNECT_EVERY: '20',
      CLIENT_DEADLINE_MS: '5000',
      GRPC_XDS_BOOTSTRAP_CONFIG: workloadBootstrap(
        xdsPorts.get('cluster-b') ?? 0,
        `sidecar~127.0.0.92~reviews-v1-92.${NAMESPACE}~${NAMESPACE}.svc.cluster.local`,
        certDir('cluster-b', 'reviews'),
      ),
    },
  });
  t.after(() => client.stop());
  const latest = (): Picks => {
    const line = [...client.lines].reverse().find((l) => l.startsWith('picks '));
    return line === undefined ? { counts: {}, errors: {} } : (JSON.parse(line.slice('picks '.length)) as Picks);
  };
  // Steady before the rotation: the interest in ratings.global reached the plane, calls answer.
  let warm: Picks = { counts: {}, errors: {} };
  await waitFor(
    async () => {
      const before = latest();
      await new Promise((r) => setTimeout(r, 2_000));
      warm = latest();
      return sum(warm.counts) - sum(before.counts) >= 20 && sum(warm.errors) === sum(before.errors);
    },
    { timeoutMs: 120_000, intervalMs: 0, message: `calls never became steady: ${JSON.stringify(latest())}` },
  );

  await t.test(
    'given steady mTLS calls from cluster-b, when the root is rotated, then every phase passes and no call fails',
    async (st) => {
      const trust = async (): Promise<TrustView> => {
        const res = await fetch(`${server.api}/api/v1/trust`, {
          headers: { authorization: `Bearer ${mesh.adminToken()}` },
        });
        return (await res.json()) as TrustView;
      };
      const start = await trust();
      const oldRoot = start.roots[0]?.id;
      const rotated = await meshctlAt(server.api, ['trust', 'rotate'], { MESHRELAY_ADMIN_TOKEN: mesh.adminToken() });
      assert.equal(rotated.code, 0, rotated.stderr);
      const startedAt = Date.now();
      const phases: { phase: number; atSeconds: number }[] = [];
      let end: TrustView = start;
      await waitFor(
        async () => {
          end = await trust();
          if (phases.at(-1)?.phase !== end.phase)
            phases.push({ phase: end.phase ?? -1, atSeconds: (Date.now() - startedAt) / 1000 });
          return end.phase === 0 && (end.generation ?? 0) >= (start.generation ?? 0) + 4;
        },
        { timeoutMs: 300_000, intervalMs: 250, message: `the rotation did not finish: ${JSON.stringify(phases)}` },
      );
      // A few more seconds of calls on the new root alone.
      await new Promise((r) => setTimeout(r, 3_000));
      const done = latest();
      const made = sum(done.counts) + sum(done.errors) - sum(warm.counts) - sum(warm.errors);
      const failed = sum(done.errors) - sum(warm.errors);
      st.diagnostic(`rotation phases (s after rotate): ${JSON.stringify(phases)}`);
      st.diagnostic(`calls during the rotation: ${made} made, ${failed} failed; errors ${JSON.stringify(done.errors)}`);
      assert.deepEqual(
        phases.map((p) => p.phase),
        [1, 2, 3, 0],
      );
      assert.equal(
        failed,
        0,
        `failed calls by code: ${JSON.stringify(done.errors)} (before: ${JSON.stringify(warm.errors)})`,
      );
      assert.ok(made > 100, `only ${made} calls were made`);
      assert.equal(end.roots.length, 1);
      assert.notEqual(end.roots[0]?.id, oldRoot);
      // The workloads now trust the new root alone.
      const bundle = readFileSync(join(certDir('cluster-b', 'reviews'), 'ca_certificate.pem'), 'utf8');
      assert.equal(bundle.match(/BEGIN CERTIFICATE/g)?.length, 1);
    },
  );

  await t.test(
    'given a Gloo AccessPolicy (STRICT, allowed clients), when it names another client, this one, then only JWT principals, then calls are denied, answered, denied with the policy WARNING',
    async () => {
      const accessPolicy = (sa: string): string => `apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata: { name: ratings-access, namespace: ${NAMESPACE} }
spec:
  applyToDestinations:
    - kind: VIRTUAL_DESTINATION
      selector: { name: ratings-global, namespace: ${NAMESPACE} }
  config:
    authn: { tlsMode: STRICT }
    authz:
      allowedClients:
        - serviceAccountSelector: { name: ${sa}, namespace: ${NAMESPACE}, cluster: cluster-b }
`;
      /** Calls answered and failed (by code) over the next two seconds. */
      const window = async (): Promise<{ answered: number; errors: Record<string, number> }> => {
        const before = latest();
        await new Promise((r) => setTimeout(r, 2_000));
        const after = latest();
        const errors: Record<string, number> = {};
        for (const [code, n] of Object.entries(after.errors)) {
          const d = n - (before.errors[code] ?? 0);
          if (d > 0) errors[code] = d;
        }
        return { answered: sum(after.counts) - sum(before.counts), errors };
      };
      mesh.writeManifest('cluster-a', 'ratings-access.yaml', accessPolicy('productpage'));
      let w = await window();
      await waitFor(async () => (w = await window()).answered === 0 && (w.errors['7'] ?? 0) >= 10, {
        timeoutMs: 90_000,
        intervalMs: 0,
        message: `reviews was never denied by the AccessPolicy: ${JSON.stringify(w)}`,
      });
      mesh.writeManifest('cluster-a', 'ratings-access.yaml', accessPolicy('reviews'));
      await waitFor(async () => (w = await window()).answered >= 20 && Object.keys(w.errors).length === 0, {
        timeoutMs: 90_000,
        intervalMs: 0,
        message: `reviews was never allowed by the AccessPolicy: ${JSON.stringify(w)}`,
      });
      // JWT request principals: gRPC servers cannot check them, so the policy allows nothing and says so.
      mesh.writeManifest(
        'cluster-a',
        'ratings-access.yaml',
        accessPolicy('reviews').replace(
          /- serviceAccountSelector: .*\n/,
          "- requestIdentityMatcher: { requestPrincipals: ['https://issuer.example/*'] }\n",
        ),
      );
      await waitFor(async () => (w = await window()).answered === 0 && (w.errors['7'] ?? 0) >= 10, {
        timeoutMs: 90_000,
        intervalMs: 0,
        message: `a JWT-only AccessPolicy did not deny: ${JSON.stringify(w)}`,
      });
      let row: { name: string; approval: string; message: string } | undefined;
      await waitFor(
        async () => {
          const { resources } = await mesh.api<{ resources: { name: string; approval: string; message: string }[] }>(
            '/api/v1/resources?kind=AccessPolicy',
          );
          row = resources.find((r) => r.name === 'ratings-access');
          return row?.approval === 'WARNING';
        },
        {
          timeoutMs: 60_000,
          intervalMs: 500,
          message: `the AccessPolicy never turned WARNING: ${JSON.stringify(row)}`,
        },
      );
      assert.match(row?.message ?? '', /requestPrincipals .*allows nothing/);
    },
  );

  await t.test(
    'given everything above, when the agents report their proxies, then none NACKed a resource',
    async () => {
      const res = await fetch(`${server.api}/api/v1/xds/proxies`, {
        headers: { authorization: `Bearer ${mesh.adminToken()}` },
      });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const nacks = [...text.matchAll(/"nacks":(\d+)/g)].map((m) => Number(m[1]));
      assert.ok(nacks.length > 0, text);
      assert.deepEqual(
        nacks.filter((n) => n > 0),
        [],
        text,
      );
    },
  );
});
