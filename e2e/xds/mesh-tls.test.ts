// gRPC's xDS security between real processes: grpc-js-xds clients (XdsChannelCredentials) call an
// XdsServer backend (XdsServerCredentials) whose TLS and RBAC come from the agent's ADS. Two ADS
// servers (one per cluster, different trust domains, intermediates from one root) are the
// agent's own AdsServer, fed the Istio output the translator writes.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Resource } from '@meshrelay/api';
import { AdsServer } from '@meshrelay/agent';
import { freePort, spawnProcess, waitFor } from '@meshrelay/testkit';
import { MeshCertificates, workloadBootstrap } from './mesh-certs.ts';
import { WHO_PATH, type Identity } from './who.ts';
import type { Picks } from './world.ts';

const run = promisify(execFile);
const HERE = import.meta.dirname;
const NS = 'bookinfo';
const BACKEND_IP = '127.0.0.81';
const SERVICE_PORT = 9080;
const PERMISSION_DENIED = '7';
const TRUST_DOMAINS = { 'cluster-a': 'cluster-a.local', 'cluster-b': 'cluster-b.local' };

const strict: Resource = {
  apiVersion: 'security.istio.io/v1',
  kind: 'PeerAuthentication',
  metadata: { name: 'ratings-strict', namespace: NS },
  spec: { selector: { matchLabels: { app: 'ratings' } }, mtls: { mode: 'STRICT' } },
};

function authorization(name: string, spec: Record<string, unknown>): Resource {
  return { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: { name, namespace: NS }, spec };
}

/** ratings in cluster-a: its Service, EndpointSlice and Pod (service account `ratings`). */
function ratingsDiscovered(backendPort: number): Resource[] {
  const meta = (name: string, labels?: Record<string, string>): Resource['metadata'] => ({
    name,
    namespace: NS,
    ...(labels ? { labels } : {}),
  });
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta('ratings'),
      spec: { ports: [{ name: 'grpc', port: SERVICE_PORT, targetPort: backendPort }] },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: meta('ratings-1', { 'kubernetes.io/service-name': 'ratings' }),
      ports: [{ name: 'grpc', port: backendPort }],
      endpoints: [
        { addresses: [BACKEND_IP], conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'ratings-0' } },
      ],
    } as unknown as Resource,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: meta('ratings-0', { app: 'ratings' }),
      spec: { serviceAccountName: 'ratings' },
      status: { podIP: BACKEND_IP },
    } as unknown as Resource,
  ];
}

/** cluster-b reaches ratings through a mesh ServiceEntry, as the translator writes for a remote destination. */
function ratingsEntry(backendPort: number): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'ratings-global', namespace: NS },
    spec: {
      hosts: ['ratings.global'],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ name: 'grpc', number: SERVICE_PORT, protocol: 'GRPC' }],
      endpoints: [{ address: BACKEND_IP, ports: { grpc: backendPort } }],
    },
  };
}

async function startAds(t: TestContext): Promise<AdsServer> {
  const ads = new AdsServer({
    port: 0,
    host: '127.0.0.1',
    registry: new Registry(),
    logger: pino({ level: 'silent' }),
  });
  await ads.start();
  t.after(() => ads.stop());
  return ads;
}

/** A call straight to the backend's address, without xDS: plaintext, or TLS that presents no certificate. */
function directCall(address: string, credentials: grpc.ChannelCredentials): Promise<string> {
  // A connection of its own: one opened before a policy change is drained, not cut, by the server.
  const client = new grpc.Client(address, credentials, {
    'grpc.ssl_target_name_override': 'ratings',
    'grpc.use_local_subchannel_pool': 1,
  });
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      WHO_PATH,
      () => Buffer.from('{}'),
      (b: Buffer) => JSON.parse(b.toString('utf8')) as Identity,
      {},
      new grpc.Metadata(),
      { deadline: Date.now() + 3_000 },
      (err) => {
        client.close();
        resolve(err ? `code ${err.code}` : 'answered');
      },
    );
  });
}

test('xDS security: mesh mTLS across clusters, STRICT, RBAC', { timeout: 600_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const certs = await MeshCertificates.create(dir, TRUST_DOMAINS);
  const [adsA, adsB] = [await startAds(t), await startAds(t)];
  const nacks: string[] = [];
  for (const ads of [adsA, adsB])
    ads.onChange(() => {
      for (const p of ads.proxies()) if (p.lastNack) nacks.push(`${p.nodeId}: ${p.lastNack.reason}`);
    });
  const backendPort = await freePort();
  const discoveredA = ratingsDiscovered(backendPort);
  const updateA = (output: Resource[]): void => {
    adsA.updateFrom({
      cluster: 'cluster-a',
      output,
      discovered: discoveredA,
      meshTls: { trustDomain: TRUST_DOMAINS['cluster-a'] },
    });
  };
  updateA([]);
  adsB.updateFrom({
    cluster: 'cluster-b',
    output: [ratingsEntry(backendPort)],
    discovered: [],
    meshTls: { trustDomain: TRUST_DOMAINS['cluster-b'] },
  });

  const serverCerts = certs.writeWorkload({ cluster: 'cluster-a', namespace: NS, serviceAccount: 'ratings' });
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
        adsA.port,
        `sidecar~${BACKEND_IP}~ratings-0.${NS}~${NS}.svc.cluster.local`,
        serverCerts,
      ),
    },
  });
  t.after(() => backend.stop());
  await backend.waitForLine(/backend listening/, 60_000);

  /** `calls` calls from a workload of `cluster` running as `serviceAccount`, through its cluster's ADS. */
  const callAs = async (cluster: 'cluster-a' | 'cluster-b', serviceAccount: string, host: string, calls = 10) => {
    const certDir = certs.writeWorkload({ cluster, namespace: NS, serviceAccount });
    const ads = cluster === 'cluster-a' ? adsA : adsB;
    const { stdout } = await run(
      process.execPath,
      [join(HERE, 'client.ts'), `xds:///${host}:${SERVICE_PORT}`, String(calls)],
      {
        env: {
          ...process.env,
          CLIENT_XDS_CREDENTIALS: '1',
          CLIENT_DEADLINE_MS: '5000',
          GRPC_XDS_BOOTSTRAP_CONFIG: workloadBootstrap(
            ads.port,
            `sidecar~127.0.0.1~${serviceAccount}-0.${NS}~${NS}.svc.cluster.local`,
            certDir,
          ),
        },
        timeout: 120_000,
      },
    );
    return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Picks;
  };
  const answered = (p: Picks): number => Object.values(p.counts).reduce((a, b) => a + b, 0);
  const noCert = grpc.credentials.createSsl(Buffer.from(certs.root.certPem), null, null, {
    checkServerIdentity: () => undefined,
  });
  const address = `${BACKEND_IP}:${backendPort}`;

  await t.test(
    'given mesh trust on, when cluster-b calls ratings in cluster-a, then all calls are answered over mTLS',
    async () => {
      const cluster = adsB.config.clusters.get(`outbound|${SERVICE_PORT}||ratings.global`);
      assert.ok(cluster?.body['transport_socket'], 'the Cluster carries an UpstreamTlsContext');
      const cross = await callAs('cluster-b', 'reviews', 'ratings.global', 20);
      assert.deepEqual(cross, { counts: { [`cluster-a/v1/${BACKEND_IP}`]: 20 }, errors: {} });
      const local = await callAs('cluster-a', 'productpage', `ratings.${NS}.svc.cluster.local`, 10);
      assert.equal(answered(local), 10, JSON.stringify(local));
      // The listener serves TLS: a plaintext caller cannot talk to it.
      assert.notEqual(await directCall(address, grpc.credentials.createInsecure()), 'answered');
    },
  );

  await t.test(
    "given a DestinationRule pinning ratings.global to another identity, when cluster-b calls, then the server's certificate is refused",
    async () => {
      const pinned = (sa: string): Resource => ({
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: { name: 'ratings-global', namespace: NS },
        spec: {
          host: 'ratings.global',
          trafficPolicy: {
            tls: {
              mode: 'ISTIO_MUTUAL',
              subjectAltNames: [`spiffe://${TRUST_DOMAINS['cluster-a']}/ns/${NS}/sa/${sa}`],
            },
          },
        },
      });
      const updateB = (extra: Resource[]): void => {
        adsB.updateFrom({
          cluster: 'cluster-b',
          output: [ratingsEntry(backendPort), ...extra],
          discovered: [],
          meshTls: { trustDomain: TRUST_DOMAINS['cluster-b'] },
        });
      };
      updateB([pinned('details')]);
      const refused = await callAs('cluster-b', 'reviews', 'ratings.global', 5);
      assert.deepEqual(refused.counts, {}, JSON.stringify(refused));
      updateB([pinned('ratings')]);
      assert.equal(answered(await callAs('cluster-b', 'reviews', 'ratings.global', 5)), 5);
      updateB([]);
    },
  );

  await t.test(
    'given PERMISSIVE (no PeerAuthentication), when a TLS caller presents no certificate, then it is answered',
    async () => {
      assert.equal(await directCall(address, noCert), 'answered');
    },
  );

  await t.test(
    'given PeerAuthentication STRICT, when callers present no certificate, then they are refused and mTLS callers pass',
    async () => {
      updateA([strict]);
      await waitFor(async () => (await directCall(address, noCert)) !== 'answered', {
        timeoutMs: 60_000,
        intervalMs: 250,
        message: 'a caller without a client certificate was still answered under STRICT',
      });
      assert.notEqual(await directCall(address, grpc.credentials.createInsecure()), 'answered');
      assert.equal(answered(await callAs('cluster-b', 'reviews', 'ratings.global', 20)), 20);
    },
  );

  await t.test(
    'given an ALLOW policy for reviews of cluster-b, when reviews and intruder call, then only intruder is denied',
    async () => {
      updateA([
        strict,
        authorization('ratings-callers', {
          selector: { matchLabels: { app: 'ratings' } },
          rules: [{ from: [{ source: { principals: [`${TRUST_DOMAINS['cluster-b']}/ns/${NS}/sa/reviews`] } }] }],
        }),
      ]);
      let intruder: Picks = { counts: {}, errors: {} };
      await waitFor(
        async () =>
          ((intruder = await callAs('cluster-b', 'intruder', 'ratings.global', 10)).errors[PERMISSION_DENIED] ?? 0) ===
          10,
        {
          timeoutMs: 60_000,
          intervalMs: 250,
          message: `intruder was not denied: ${JSON.stringify(intruder)}`,
        },
      );
      const reviews = await callAs('cluster-b', 'reviews', 'ratings.global', 20);
      assert.deepEqual(reviews, { counts: { [`cluster-a/v1/${BACKEND_IP}`]: 20 }, errors: {} });
      assert.deepEqual(intruder, { counts: {}, errors: { [PERMISSION_DENIED]: 10 } });
    },
  );

  await t.test(
    'given a DENY policy for reviews, when reviews and intruder call, then only reviews is denied',
    async () => {
      updateA([
        strict,
        authorization('no-reviews', {
          action: 'DENY',
          rules: [{ from: [{ source: { principals: [`${TRUST_DOMAINS['cluster-b']}/ns/${NS}/sa/reviews`] } }] }],
        }),
      ]);
      let reviews: Picks = { counts: {}, errors: {} };
      await waitFor(
        async () =>
          ((reviews = await callAs('cluster-b', 'reviews', 'ratings.global', 10)).errors[PERMISSION_DENIED] ?? 0) ===
          10,
        {
          timeoutMs: 60_000,
          intervalMs: 250,
          message: `reviews was not denied: ${JSON.stringify(reviews)}`,
        },
      );
      assert.equal(answered(await callAs('cluster-b', 'intruder', 'ratings.global', 10)), 10);
    },
  );

  await t.test(
    'given an ALLOW policy gRPC cannot check (JWT principals), when anyone calls, then it is denied and a finding says why',
    async () => {
      updateA([
        strict,
        authorization('jwt-only', {
          selector: { matchLabels: { app: 'ratings' } },
          rules: [{ from: [{ source: { requestPrincipals: ['https://issuer.example/*'] } }] }],
        }),
      ]);
      assert.ok(
        adsA.config.findings.some(
          (f) => f.source === `AuthorizationPolicy ${NS}/jwt-only` && /allows nothing/.test(f.message),
        ),
        JSON.stringify(adsA.config.findings),
      );
      let reviews: Picks = { counts: {}, errors: {} };
      await waitFor(
        async () =>
          ((reviews = await callAs('cluster-b', 'reviews', 'ratings.global', 10)).errors[PERMISSION_DENIED] ?? 0) ===
          10,
        {
          timeoutMs: 60_000,
          intervalMs: 250,
          message: `reviews was not denied under an uncheckable ALLOW: ${JSON.stringify(reviews)}`,
        },
      );
    },
  );

  await t.test(
    'given every step above, when the ADS streams are read, then no client or server NACKed a resource',
    () => {
      assert.deepEqual(nacks, []);
      const server = adsA.proxies().find((p) => p.nodeId.includes('ratings-0'));
      assert.ok(server, 'the backend keeps its ADS stream');
      assert.deepEqual(server.subscribed['lds'], [`grpc/server?xds.resource.listening_address=${address}`]);
      assert.notEqual(server.ackedVersion['lds'], '');
    },
  );
});
