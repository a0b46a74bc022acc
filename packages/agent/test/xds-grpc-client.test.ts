/**
 * A real proxyless gRPC client (@grpc/grpc-js-xds, in a child process) reads the agent's
 * ADS server and calls real @grpc/grpc-js backends: a header match reaches its subset
 * every time, an 80/20 split holds over 2,000 calls, and a cluster the client rejects
 * (NACK) leaves calls flowing on the last good config and shows in metrics and proxies.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import {
  Server,
  ServerCredentials,
  loadPackageDefinition,
  type GrpcObject,
  type ServiceClientConstructor,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Resource } from '@meshrelay/api';
import { buildXdsConfig, clusterName, hashBody, type XdsConfig } from '@meshrelay/xds';
import { AdsServer } from '../src/xds/ads-server.ts';

const FIXTURES = new URL('./fixtures/xds/', import.meta.url).pathname;
const HOST = 'who.global';
const PORT = 9080;
const Who = (
  (loadPackageDefinition(loadSync(`${FIXTURES}who.proto`, { keepCase: true }))['meshrelay'] as GrpcObject)[
    'test'
  ] as GrpcObject
)['Who'] as ServiceClientConstructor;

/** A backend on 127.0.0.1 that answers every call with its name. */
async function startBackend(name: string): Promise<{ port: number; server: Server }> {
  const server = new Server();
  server.addService(Who.service, {
    Ask: (_call: unknown, cb: (err: null, reply: { backend: string }) => void) => cb(null, { backend: name }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { port, server };
}

/** The applied output the translation reads: the host's endpoints by version, subsets, and the routing under test. */
function output(ports: Record<string, number>): Resource[] {
  const meta = (name: string) => ({ name, namespace: 'shop' });
  return [
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: meta('who'),
      spec: {
        hosts: [HOST],
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: [{ name: 'grpc', number: PORT, protocol: 'GRPC' }],
        endpoints: Object.entries(ports).map(([version, port]) => ({
          address: '127.0.0.1',
          labels: { app: 'who', version },
          locality: 'eu/eu-1a',
          ports: { grpc: port },
        })),
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: meta('who'),
      spec: { host: HOST, subsets: Object.keys(ports).map((version) => ({ name: version, labels: { version } })) },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: meta('who'),
      spec: {
        hosts: [HOST],
        http: [
          {
            name: 'testers',
            match: [{ headers: { 'x-user': { exact: 'tester' } } }],
            route: [{ destination: { host: HOST, subset: 'v2' } }],
          },
          {
            name: 'split',
            route: [
              { destination: { host: HOST, subset: 'v1' }, weight: 80 },
              { destination: { host: HOST, subset: 'v3' }, weight: 20 },
            ],
          },
        ],
      },
    },
  ];
}

/** The same config with one cluster turned into a kind gRPC clients reject (STATIC without endpoints). */
function withRejectedCluster(config: XdsConfig, name: string): XdsConfig {
  const clusters = new Map(config.clusters);
  const good = clusters.get(name);
  assert.ok(good, `cluster ${name} is in the config`);
  const { eds_cluster_config: _eds, ...rest } = good.body;
  const body = { ...rest, type: 'STATIC' };
  clusters.set(name, { name, hash: hashBody(body), body });
  return { ...config, clusters };
}

/** The client child: one JSON line of counts per `ask`. */
function startClient(adsPort: number) {
  const bootstrap = {
    xds_servers: [
      { server_uri: `127.0.0.1:${adsPort}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
    ],
    node: { id: 'sidecar~127.0.0.1~who-client.shop~shop.svc.cluster.local', locality: { region: 'eu', zone: 'eu-1a' } },
  };
  const child = spawn(process.execPath, [`${FIXTURES}who-client.ts`], {
    env: {
      ...process.env,
      GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap),
      MESHRELAY_TEST_TARGET: `xds:///${HOST}:${PORT}`,
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const ask = async (calls: number, user?: string): Promise<Record<string, number>> => {
    child.stdin.write(`${JSON.stringify({ calls, ...(user !== undefined ? { user } : {}) })}\n`);
    const next = await lines.next();
    assert.ok(!next.done, 'the client exited early');
    return JSON.parse(next.value as string) as Record<string, number>;
  };
  const stop = (): void => {
    child.stdin.end();
    child.kill();
  };
  return { ask, stop };
}

async function waitFor(cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test(
  'given a grpc-js-xds client on the agent ADS server, then header matches, weights and a NACK behave as configured',
  { timeout: 170_000 },
  async (t) => {
    const backends = { v1: await startBackend('v1'), v2: await startBackend('v2'), v3: await startBackend('v3') };
    t.after(() => Object.values(backends).forEach((b) => b.server.forceShutdown()));
    const registry = new Registry();
    const ads = new AdsServer({ port: 0, host: '127.0.0.1', registry, logger: pino({ level: 'silent' }) });
    await ads.start();
    t.after(() => ads.stop());
    const good = buildXdsConfig({
      cluster: 'east',
      output: output({ v1: backends.v1.port, v2: backends.v2.port, v3: backends.v3.port }),
      discovered: [],
    });
    assert.deepEqual(good.findings, []);
    ads.setConfig(good);
    const client = startClient(ads.port);
    t.after(client.stop);

    await t.test('a header match sends the tester to v2 every time', async () => {
      assert.deepEqual(await client.ask(200, 'tester'), { v2: 200 });
    });

    await t.test('an 80/20 split holds within 5 % over 2,000 calls', async (st) => {
      const counts = await client.ask(2000, 'someone');
      st.diagnostic(`answers by backend: ${JSON.stringify(counts)}`);
      assert.equal((counts['v1'] ?? 0) + (counts['v3'] ?? 0), 2000, JSON.stringify(counts));
      const share = (counts['v1'] ?? 0) / 2000;
      assert.ok(Math.abs(share - 0.8) <= 0.05, `v1 share ${share} (${JSON.stringify(counts)})`);
    });

    await t.test(
      'a rejected cluster is NACKed, counted and shown, and calls flow on the last good config',
      async () => {
        ads.setConfig(withRejectedCluster(good, clusterName(HOST, PORT, 'v2')));
        await waitFor(() => ads.proxies().some((p) => p.lastNack !== undefined));
        const [proxy] = ads.proxies();
        assert.equal(proxy?.lastNack?.typeUrl, 'type.googleapis.com/envoy.config.cluster.v3.Cluster');
        assert.ok((proxy?.lastNack?.reason ?? '').length > 0);
        assert.match(await registry.metrics(), /meshrelay_xds_nacks_total\{type="cds"\} [1-9]/);
        assert.deepEqual(await client.ask(100, 'tester'), { v2: 100 });
        const counts = await client.ask(500, 'someone');
        assert.equal((counts['v1'] ?? 0) + (counts['v3'] ?? 0), 500, JSON.stringify(counts));
      },
    );
  },
);
