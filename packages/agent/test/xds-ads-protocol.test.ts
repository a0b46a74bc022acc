/**
 * The agent's ADS server against a raw ADS client stream (proto-loader): node per stream,
 * ACK/NACK by error_detail with the last good config kept and counted, complete LDS
 * responses, pushes only to streams whose resources changed, versions stable across a
 * restart of the server with the same input.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { credentials, type ClientDuplexStream } from '@grpc/grpc-js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Resource } from '@meshrelay/api';
import { CLUSTER_TYPE, ENDPOINT_TYPE, LISTENER_TYPE, buildXdsConfig } from '@meshrelay/xds';
import { loadAdsService } from '../src/xds/ads-protos.ts';
import { AdsServer } from '../src/xds/ads-server.ts';

const logger = pino({ level: 'silent' });
const AdsClient = loadAdsService();

function serviceEntry(host: string, addresses: string[]): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: host.split('.')[0] ?? host, namespace: 'shop' },
    spec: {
      hosts: [host],
      resolution: 'STATIC',
      ports: [{ name: 'grpc', number: 9080, protocol: 'GRPC' }],
      endpoints: addresses.map((address) => ({ address, locality: 'eu/eu-1a' })),
    },
  };
}

function config(reviews: string[], ratings: string[] = ['127.0.0.9']) {
  return buildXdsConfig({
    cluster: 'east',
    output: [serviceEntry('reviews.global', reviews), serviceEntry('ratings.global', ratings)],
    discovered: [],
  });
}

interface Response {
  version_info: string;
  type_url: string;
  nonce: string;
  resources: Record<string, unknown>[];
}

/** A raw ADS stream that queues responses and lets a test wait for the next one. */
function openStream(port: number) {
  const client = new AdsClient(`127.0.0.1:${port}`, credentials.createInsecure());
  const call = (
    client as unknown as { StreamAggregatedResources(): ClientDuplexStream<unknown, Response> }
  ).StreamAggregatedResources();
  const queue: Response[] = [];
  const waiters: ((r: Response) => void)[] = [];
  call.on('data', (r: Response) => {
    const w = waiters.shift();
    if (w) w(r);
    else queue.push(r);
  });
  call.on('error', () => undefined);
  const next = (timeoutMs = 10_000): Promise<Response> => {
    const r = queue.shift();
    if (r) return Promise.resolve(r);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no response in time')), timeoutMs);
      waiters.push((x) => {
        clearTimeout(timer);
        resolve(x);
      });
    });
  };
  const send = (req: Record<string, unknown>): void => void call.write(req);
  const close = (): void => {
    call.cancel();
    client.close();
  };
  return { call, next, send, close, pending: () => queue.length };
}

async function startServer(registry = new Registry()) {
  const server = new AdsServer({ port: 0, host: '127.0.0.1', registry, logger });
  await server.start();
  return { server, registry };
}

async function waitFor(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const node = {
  id: 'sidecar~127.0.0.1~client-1.shop~shop.svc.cluster.local',
  locality: { region: 'eu', zone: 'eu-1a' },
};
const REVIEWS_CLUSTER = 'outbound|9080||reviews.global';

test(
  'given a proxy that ACKs listeners and NACKs a cluster, then the NACK is counted and shown and the last good config kept',
  { timeout: 60_000 },
  async (t) => {
    const { server, registry } = await startServer();
    t.after(() => server.stop());
    server.setConfig(config(['127.0.0.1']));
    const s = openStream(server.port);
    t.after(s.close);
    s.send({ node, type_url: LISTENER_TYPE, resource_names: ['reviews.global:9080', 'ratings.global:9080'] });
    const lds = await s.next();
    assert.deepEqual(lds.resources.map((r) => r['name']).sort(), ['ratings.global:9080', 'reviews.global:9080']);
    s.send({
      type_url: LISTENER_TYPE,
      resource_names: ['reviews.global:9080', 'ratings.global:9080'],
      version_info: lds.version_info,
      response_nonce: lds.nonce,
    });
    s.send({ type_url: CLUSTER_TYPE, resource_names: [REVIEWS_CLUSTER] });
    const cds = await s.next();
    s.send({
      type_url: CLUSTER_TYPE,
      resource_names: [REVIEWS_CLUSTER],
      version_info: '',
      response_nonce: cds.nonce,
      error_detail: { code: 3, message: 'cluster rejected for a test' },
    });
    await waitFor(() => server.proxies()[0]?.lastNack !== undefined);
    const [proxy] = server.proxies();
    assert.equal(proxy?.nodeId, node.id);
    assert.deepEqual(proxy?.locality, { region: 'eu', zone: 'eu-1a' });
    assert.equal(proxy?.ackedVersion['lds'], lds.version_info);
    assert.equal(proxy?.ackedVersion['cds'], '');
    assert.equal(proxy?.lastNack?.reason, 'cluster rejected for a test');
    assert.equal(proxy?.lastNack?.version, cds.version_info);
    assert.equal(proxy?.nacks, 1);
    const metrics = await registry.metrics();
    assert.match(metrics, /meshrelay_xds_nacks_total\{type="cds"\} 1/);
    assert.match(metrics, /meshrelay_xds_connected_proxies 1/);
    // The NACK is not answered with a resend of the rejected config: a round trip on LDS proves nothing is queued.
    s.send({
      type_url: LISTENER_TYPE,
      resource_names: ['reviews.global:9080'],
      version_info: lds.version_info,
      response_nonce: lds.nonce,
    });
    const narrowed = await s.next();
    assert.equal(narrowed.type_url, LISTENER_TYPE);
    assert.equal(s.pending(), 0);
  },
);

test(
  'given a wildcard LDS subscription, when a host is added, then the push carries every listener',
  { timeout: 60_000 },
  async (t) => {
    const { server } = await startServer();
    t.after(() => server.stop());
    server.setConfig(
      buildXdsConfig({ cluster: 'east', output: [serviceEntry('reviews.global', ['127.0.0.1'])], discovered: [] }),
    );
    const s = openStream(server.port);
    t.after(s.close);
    s.send({ node, type_url: LISTENER_TYPE, resource_names: [] });
    const first = await s.next();
    assert.deepEqual(
      first.resources.map((r) => r['name']),
      ['reviews.global:9080'],
    );
    s.send({
      type_url: LISTENER_TYPE,
      resource_names: [],
      version_info: first.version_info,
      response_nonce: first.nonce,
    });
    server.setConfig(config(['127.0.0.1']));
    const second = await s.next();
    assert.deepEqual(second.resources.map((r) => r['name']).sort(), ['ratings.global:9080', 'reviews.global:9080']);
    assert.notEqual(second.version_info, first.version_info);
  },
);

test(
  'given two proxies watching different endpoints, when one host changes, then only its watcher gets a push',
  { timeout: 60_000 },
  async (t) => {
    const { server, registry } = await startServer();
    t.after(() => server.stop());
    server.setConfig(config(['127.0.0.1']));
    const a = openStream(server.port);
    const b = openStream(server.port);
    t.after(() => {
      a.close();
      b.close();
    });
    a.send({ node, type_url: ENDPOINT_TYPE, resource_names: [REVIEWS_CLUSTER] });
    b.send({ node: { id: 'b' }, type_url: ENDPOINT_TYPE, resource_names: ['outbound|9080||ratings.global'] });
    const a1 = await a.next();
    const b1 = await b.next();
    a.send({
      type_url: ENDPOINT_TYPE,
      resource_names: [REVIEWS_CLUSTER],
      version_info: a1.version_info,
      response_nonce: a1.nonce,
    });
    b.send({
      type_url: ENDPOINT_TYPE,
      resource_names: ['outbound|9080||ratings.global'],
      version_info: b1.version_info,
      response_nonce: b1.nonce,
    });
    await waitFor(() => server.proxies().length === 2 && server.proxies().every((p) => p.ackedVersion['eds'] !== ''));
    server.setConfig(config(['127.0.0.1', '127.0.0.2']));
    const a2 = await a.next();
    const cla = a2.resources[0] as { endpoints: { lb_endpoints: unknown[] }[] };
    assert.equal(cla.endpoints[0]?.lb_endpoints.length, 2);
    assert.notEqual(a2.version_info, a1.version_info);
    // A round trip on b after the push proves the server had nothing for b.
    b.send({ type_url: CLUSTER_TYPE, resource_names: ['outbound|9080||ratings.global'] });
    const bCds = await b.next();
    assert.equal(bCds.type_url, CLUSTER_TYPE);
    assert.equal(b.pending(), 0);
    assert.match(await registry.metrics(), /meshrelay_xds_pushes_total\{type="eds"\} 3/);
  },
);

test(
  'given a proxy that reconnects to a restarted server with the same input, then the versions are the ones it had',
  { timeout: 60_000 },
  async (t) => {
    const first = await startServer();
    first.server.setConfig(config(['127.0.0.1']));
    const s1 = openStream(first.server.port);
    s1.send({ node, type_url: CLUSTER_TYPE, resource_names: [REVIEWS_CLUSTER] });
    const cdsBefore = await s1.next();
    s1.send({ type_url: ENDPOINT_TYPE, resource_names: [REVIEWS_CLUSTER] });
    const edsBefore = await s1.next();
    s1.close();
    await first.server.stop();
    const second = await startServer();
    t.after(() => second.server.stop());
    second.server.setConfig(config(['127.0.0.1']));
    const s2 = openStream(second.server.port);
    t.after(s2.close);
    s2.send({ node, type_url: CLUSTER_TYPE, resource_names: [REVIEWS_CLUSTER], version_info: cdsBefore.version_info });
    assert.equal((await s2.next()).version_info, cdsBefore.version_info);
    s2.send({ type_url: ENDPOINT_TYPE, resource_names: [REVIEWS_CLUSTER], version_info: edsBefore.version_info });
    assert.equal((await s2.next()).version_info, edsBefore.version_info);
  },
);

test(
  'given a stream whose first request has no node, then it is closed with INVALID_ARGUMENT',
  { timeout: 60_000 },
  async (t) => {
    const { server } = await startServer();
    t.after(() => server.stop());
    const client = new AdsClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    t.after(() => client.close());
    const call = (
      client as unknown as { StreamAggregatedResources(): ClientDuplexStream<unknown, Response> }
    ).StreamAggregatedResources();
    const closed = new Promise<number>((resolve) => call.on('error', (err: { code: number }) => resolve(err.code)));
    call.on('data', () => undefined);
    call.write({ type_url: LISTENER_TYPE, resource_names: ['x:1'] });
    assert.equal(await closed, 3);
  },
);

test(
  'given no config yet, when a proxy subscribes, then it is held (never told its listener is missing) and answered once the config comes',
  { timeout: 30_000 },
  async (t) => {
    const { server } = await startServer();
    t.after(() => server.stop());
    const stream = openStream(server.port);
    t.after(stream.close);
    stream.send({ node, type_url: LISTENER_TYPE, resource_names: ['reviews.global:9080'] });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(stream.pending(), 0, 'a proxy was answered before the agent had a config');
    server.setConfig(config(['127.0.0.1']));
    const lds = await stream.next();
    assert.deepEqual(
      lds.resources.map((r) => r['name']),
      ['reviews.global:9080'],
    );
  },
);

test(
  'given a replica that stops leading, then open streams end UNAVAILABLE and new ones are refused until it leads again',
  { timeout: 30_000 },
  async (t) => {
    const { server } = await startServer();
    t.after(() => server.stop());
    server.setConfig(config(['127.0.0.1']));
    const open = openStream(server.port);
    t.after(open.close);
    open.send({ node, type_url: LISTENER_TYPE, resource_names: ['reviews.global:9080'] });
    await open.next();
    const ended = new Promise<{ code: number; details: string }>((resolve) => open.call.on('status', resolve));
    server.setLeading(false);
    const status = await ended;
    assert.equal(status.code, 14);
    assert.match(status.details, /does not lead/);
    assert.equal(server.proxies().length, 0);

    const refused = openStream(server.port);
    t.after(refused.close);
    const refusedStatus = new Promise<{ code: number }>((resolve) => refused.call.on('status', resolve));
    refused.send({ node, type_url: LISTENER_TYPE, resource_names: ['reviews.global:9080'] });
    assert.equal((await refusedStatus).code, 14);

    server.setLeading(true);
    const again = openStream(server.port);
    t.after(again.close);
    again.send({ node, type_url: LISTENER_TYPE, resource_names: ['reviews.global:9080'] });
    assert.deepEqual(
      (await again.next()).resources.map((r) => r['name']),
      ['reviews.global:9080'],
    );
  },
);

test(
  'given a proxy watching two endpoint resources, when one changes, then the push carries only that one; a new subscription gets all',
  { timeout: 30_000 },
  async (t) => {
    const { server } = await startServer();
    t.after(() => server.stop());
    server.setConfig(config(['127.0.0.1']));
    const s = openStream(server.port);
    t.after(s.close);
    const names = [REVIEWS_CLUSTER, 'outbound|9080||ratings.global'];
    s.send({ node, type_url: ENDPOINT_TYPE, resource_names: names });
    const first = await s.next();
    assert.equal(first.resources.length, 2);
    s.send({
      type_url: ENDPOINT_TYPE,
      resource_names: names,
      version_info: first.version_info,
      response_nonce: first.nonce,
    });
    server.setConfig(config(['127.0.0.1', '127.0.0.2']));
    const change = await s.next();
    assert.deepEqual(
      change.resources.map((r) => r['cluster_name']),
      [REVIEWS_CLUSTER],
    );
    assert.notEqual(change.version_info, first.version_info);
    s.send({
      type_url: ENDPOINT_TYPE,
      resource_names: names,
      version_info: change.version_info,
      response_nonce: change.nonce,
    });
    // Subscribing to a third name is a new request: it is answered with everything subscribed.
    s.send({
      type_url: ENDPOINT_TYPE,
      resource_names: [...names, 'outbound|9080||nothing.global'],
      version_info: change.version_info,
      response_nonce: change.nonce,
    });
    const resubscribed = await s.next();
    assert.equal(resubscribed.resources.length, 2);
  },
);
