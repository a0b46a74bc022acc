/**
 * XdsServer Listeners over the agent's ADS, against a raw ADS client stream: the Listener of a
 * bound address is built on request for the Pod at that address, carries the mesh TLS once
 * mesh trust is on, and is pushed again (with a client certificate required) when a
 * PeerAuthentication turns STRICT; an address no workload has gets nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { credentials, type ClientDuplexStream } from '@grpc/grpc-js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Resource } from '@meshrelay/api';
import { LISTENER_TYPE, serverListenerName, type XdsInput } from '@meshrelay/xds';
import { loadAdsService } from '../src/xds/ads-protos.ts';
import { AdsServer } from '../src/xds/ads-server.ts';

const AdsClient = loadAdsService();

interface Response {
  readonly version_info: string;
  readonly nonce: string;
  readonly resources: Record<string, unknown>[];
}

const pod: Resource = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'ratings-0', namespace: 'shop', labels: { app: 'ratings' } },
  status: { podIP: '10.0.0.7' },
} as unknown as Resource;

const strict: Resource = {
  apiVersion: 'security.istio.io/v1',
  kind: 'PeerAuthentication',
  metadata: { name: 'default', namespace: 'shop' },
  spec: { mtls: { mode: 'STRICT' } },
};

function input(output: Resource[], meshTls: boolean): XdsInput {
  return { cluster: 'east', output, discovered: [pod], ...(meshTls ? { meshTls: { trustDomain: 'east.local' } } : {}) };
}

/** One raw ADS stream: send requests, await responses in order. */
function openStream(port: number) {
  const client = new AdsClient(`127.0.0.1:${port}`, credentials.createInsecure());
  const call = (
    client as unknown as { StreamAggregatedResources(): ClientDuplexStream<unknown, Response> }
  ).StreamAggregatedResources();
  const queue: Response[] = [];
  const waiters: ((r: Response) => void)[] = [];
  call.on('data', (r: Response) => (waiters.shift() ?? ((x: Response) => queue.push(x)))(r));
  call.on('error', () => undefined);
  const next = (): Promise<Response> =>
    queue.length > 0
      ? Promise.resolve(queue.shift() as Response)
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('no response in time')), 10_000);
          waiters.push((r) => {
            clearTimeout(timer);
            resolve(r);
          });
        });
  const close = (): void => {
    call.cancel();
    client.close();
  };
  return { send: (req: Record<string, unknown>) => void call.write(req), next, close };
}

/** The DownstreamTlsContext of a Listener response's only resource, or undefined when it has none. */
function tlsOf(r: Response): Record<string, unknown> | undefined {
  const listener = r.resources[0] as { default_filter_chain?: { transport_socket?: { typed_config?: object } } };
  return listener.default_filter_chain?.transport_socket?.typed_config as Record<string, unknown> | undefined;
}

test('XdsServer Listeners through the ADS server', { timeout: 60_000 }, async (t) => {
  const server = new AdsServer({ port: 0, registry: new Registry(), logger: pino({ level: 'silent' }) });
  await server.start();
  t.after(() => server.stop());
  server.updateFrom(input([], false));
  const stream = openStream(server.port);
  t.after(() => stream.close());
  const name = serverListenerName('10.0.0.7', 8080);
  const request = (nonce = '', version = ''): void =>
    stream.send({
      node: { id: 'sidecar~10.0.0.7~ratings-0.shop~shop.svc.cluster.local' },
      type_url: LISTENER_TYPE,
      resource_names: [name, serverListenerName('10.0.0.99', 8080)],
      response_nonce: nonce,
      version_info: version,
    });

  await t.test('given mesh trust off, when a server asks for its Listener, then it is served plaintext', async () => {
    request();
    const first = await stream.next();
    assert.deepEqual(
      first.resources.map((r) => r['name']),
      [name],
      'the unknown address gets no Listener',
    );
    assert.equal(tlsOf(first), undefined);
    request(first.nonce, first.version_info);
  });

  await t.test(
    'given mesh trust turns on, when pushed, then the Listener serves TLS without requiring a client certificate',
    async () => {
      server.updateFrom(input([], true));
      const pushed = await stream.next();
      assert.deepEqual(tlsOf(pushed)?.['require_client_certificate'], { value: false });
      request(pushed.nonce, pushed.version_info);
    },
  );

  await t.test('given a STRICT PeerAuthentication, when pushed, then a client certificate is required', async () => {
    server.updateFrom(input([strict], true));
    const pushed = await stream.next();
    assert.deepEqual(tlsOf(pushed)?.['require_client_certificate'], { value: true });
    request(pushed.nonce, pushed.version_info);
    const proxy = server.proxies().find((p) => p.nodeId.includes('ratings-0'));
    assert.equal(proxy?.nacks, 0);
  });
});
