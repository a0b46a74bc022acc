/**
 * The agent serves xDS from what it discovered while the relay is down (headless), on its
 * --xds-socket, and lists the connected proxy at GET /xds/proxies on its health port.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { credentials, type ClientDuplexStream } from '@grpc/grpc-js';
import type { Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { LISTENER_TYPE } from '@meshrelay/xds';
import { Agent } from '../src/agent.ts';
import type { AgentConfig } from '../src/config.ts';
import { loadAdsService } from '../src/xds/ads-protos.ts';
import type { ProxyStatus } from '../src/xds/ads-stream.ts';
import { captureLogger, serviceYaml, tempDir } from './support/fixtures.ts';
import { settled, startRelay } from './support/relay-harness.ts';

interface Response {
  version_info: string;
  nonce: string;
  resources: Record<string, unknown>[];
}

const RATINGS_ENTRY: Resource = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'ratings', namespace: 'bookinfo' },
  spec: {
    hosts: ['ratings.global'],
    resolution: 'STATIC',
    ports: [{ name: 'grpc', number: 9080, protocol: 'GRPC' }],
    endpoints: [{ address: '127.0.0.7' }],
  },
};

/** LEAST_REQUEST is not available to gRPC clients: a finding, served at /xds/findings. */
const RATINGS_RULE: Resource = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'DestinationRule',
  metadata: { name: 'ratings', namespace: 'bookinfo' },
  spec: { host: 'ratings.global', trafficPolicy: { loadBalancer: { simple: 'LEAST_REQUEST' } } },
};

async function setup(t: TestContext) {
  const relay = await startRelay(t);
  const root = await tempDir(t);
  const manifestsDir = path.join(root, 'manifests');
  await mkdir(manifestsDir);
  await writeFile(path.join(manifestsDir, 'reviews.yaml'), serviceYaml('reviews'));
  await writeFile(path.join(root, 'ca.pem'), relay.caPem);
  await writeFile(path.join(root, 'token'), `${relay.token}\n`);
  const socket = path.join(root, 'xds.sock');
  const config: AgentConfig = {
    cluster: 'east',
    serverAddresses: [relay.address],
    tokenFile: path.join(root, 'token'),
    rootCaFile: path.join(root, 'ca.pem'),
    manifestsDir,
    outputDir: path.join(root, 'output'),
    stateDir: path.join(root, 'state'),
    credentialsNamespace: 'gloo-mesh',
    debounceMs: 20,
    rescanIntervalMs: 60_000,
    healthPort: 0,
    heartbeatIntervalMs: 100,
    heartbeatTimeoutMs: 600,
    logLevel: 'debug',
    maxSnapshotBytes: 1024 * 1024,
    accessLogPort: 0,
    xdsSocket: socket,
    leaderElection: 'none',
    leaseName: 'meshrelay-agent-east',
    leaseNamespace: 'gloo-mesh',
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    replicaId: 'east-0',
  };
  return { relay, config, socket };
}

async function startAgent(t: TestContext, config: AgentConfig): Promise<Agent> {
  const agent = new Agent(config, captureLogger().logger, {
    backoff: { baseMs: 20, capMs: 200 },
    defaultMetrics: false,
    healthHost: '127.0.0.1',
  });
  await agent.start();
  t.after(() => agent.stop());
  return agent;
}

/** A wildcard LDS stream on the socket that ACKs every response and hands out the listener names of each. */
function watchListeners(t: TestContext, socket: string) {
  const Ads = loadAdsService();
  const client = new Ads(`unix:${socket}`, credentials.createInsecure());
  const call = (
    client as unknown as { StreamAggregatedResources(): ClientDuplexStream<unknown, Response> }
  ).StreamAggregatedResources();
  const seen: string[][] = [];
  call.on('data', (r: Response) => {
    seen.push(r.resources.map((x) => String(x['name'])).sort());
    call.write({ type_url: LISTENER_TYPE, resource_names: [], version_info: r.version_info, response_nonce: r.nonce });
  });
  call.on('error', () => undefined);
  call.write({ node: { id: 'proxy-2' }, type_url: LISTENER_TYPE, resource_names: [] });
  const stop = (): void => {
    call.cancel();
    client.close();
  };
  t.after(stop);
  return { seen, stop };
}

test(
  'given an agent with --xds-socket and the relay down, when a proxy subscribes, then it gets the discovered Service and is listed at /xds/proxies',
  { timeout: 120_000 },
  async (t) => {
    const relay = await startRelay(t);
    relay.proxy.setDown(true);
    const root = await tempDir(t);
    const manifestsDir = path.join(root, 'manifests');
    await mkdir(manifestsDir);
    await writeFile(path.join(manifestsDir, 'reviews.yaml'), serviceYaml('reviews'));
    await writeFile(path.join(root, 'ca.pem'), relay.caPem);
    await writeFile(path.join(root, 'token'), `${relay.token}\n`);
    const socket = path.join(root, 'xds.sock');
    const { logger } = captureLogger();
    const agent = new Agent(
      {
        cluster: 'east',
        serverAddresses: [relay.address],
        tokenFile: path.join(root, 'token'),
        rootCaFile: path.join(root, 'ca.pem'),
        manifestsDir,
        outputDir: path.join(root, 'output'),
        stateDir: path.join(root, 'state'),
        credentialsNamespace: 'gloo-mesh',
        debounceMs: 20,
        rescanIntervalMs: 60_000,
        healthPort: 0,
        heartbeatIntervalMs: 100,
        heartbeatTimeoutMs: 600,
        logLevel: 'debug',
        maxSnapshotBytes: 1024 * 1024,
        accessLogPort: 0,
        xdsSocket: socket,
        leaderElection: 'none',
        leaseName: 'meshrelay-agent-east',
        leaseNamespace: 'gloo-mesh',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
        replicaId: 'east-0',
      },
      logger,
      { backoff: { baseMs: 20, capMs: 200 }, defaultMetrics: false, healthHost: '127.0.0.1' },
    );
    await agent.start();
    t.after(() => agent.stop());

    const Ads = loadAdsService();
    const client = new Ads(`unix:${socket}`, credentials.createInsecure());
    const call = (
      client as unknown as { StreamAggregatedResources(): ClientDuplexStream<unknown, Response> }
    ).StreamAggregatedResources();
    t.after(() => {
      call.cancel();
      client.close();
    });
    call.on('error', () => undefined);
    const first = new Promise<Response>((resolve) => call.once('data', resolve));
    call.write({ node: { id: 'proxy-1', locality: { region: 'eu' } }, type_url: LISTENER_TYPE, resource_names: [] });
    const lds = await first;
    assert.deepEqual(
      lds.resources.map((r) => r['name']),
      ['reviews.bookinfo.svc.cluster.local:9080'],
    );
    call.write({
      type_url: LISTENER_TYPE,
      resource_names: [],
      version_info: lds.version_info,
      response_nonce: lds.nonce,
    });

    const deadline = Date.now() + 10_000;
    let proxies: ProxyStatus[] = [];
    while (Date.now() < deadline) {
      proxies = (await (await fetch(`http://127.0.0.1:${agent.healthPort}/xds/proxies`)).json()) as ProxyStatus[];
      if (proxies[0]?.ackedVersion['lds'] === lds.version_info) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(proxies.length, 1);
    assert.equal(proxies[0]?.nodeId, 'proxy-1');
    assert.deepEqual(proxies[0]?.subscribed, { lds: [] });
    assert.equal(proxies[0]?.ackedVersion['lds'], lds.version_info);
    const metrics = await (await fetch(`http://127.0.0.1:${agent.healthPort}/metrics`)).text();
    assert.match(metrics, /meshrelay_xds_connected_proxies\{cluster="east"\} 1/);
    assert.match(metrics, /meshrelay_xds_pushes_total\{type="lds",cluster="east"\} 1/);
  },
);

test(
  'given an agent serving xDS, when an output arrives and the agent restarts with the relay down, then proxies get the output before and after',
  { timeout: 120_000 },
  async (t) => {
    const { relay, config, socket } = await setup(t);
    const first = await startAgent(t, config);
    const before = watchListeners(t, socket);
    // The server's own answer to the input comes first; an output published before it would be replaced.
    await waitFor(() => before.seen.length >= 1 && relay.stored.length === 1 && settled(relay), { timeoutMs: 10_000 });
    assert.deepEqual(before.seen[0], ['reviews.bookinfo.svc.cluster.local:9080']);
    const output = relay.publish(
      [RATINGS_ENTRY, RATINGS_RULE],
      [{ cluster: 'east', inputHash: relay.stored[0]?.hash ?? '' }],
    );
    await waitFor(() => relay.server.connections.applied('east') === output.hash, { timeoutMs: 10_000 });
    await waitFor(() => before.seen.some((names) => names.includes('ratings.global:9080')), { timeoutMs: 10_000 });
    const findings = (await (await fetch(`http://127.0.0.1:${first.healthPort}/xds/findings`)).json()) as {
      source: string;
      field: string;
    }[];
    assert.deepEqual(
      findings.map((f) => [f.source, f.field]),
      [['DestinationRule bookinfo/ratings', 'spec.trafficPolicy.loadBalancer.simple']],
    );
    before.stop();
    await first.stop();

    relay.proxy.setDown(true);
    await startAgent(t, config);
    const after = watchListeners(t, socket);
    await waitFor(() => after.seen.some((names) => names.includes('ratings.global:9080')), { timeoutMs: 10_000 }).catch(
      (err: unknown) => {
        throw new Error(`after the restart the proxy saw ${JSON.stringify(after.seen)}`, { cause: err });
      },
    );
  },
);
