import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { credentials, type Client, type ClientWritableStream } from '@grpc/grpc-js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { AccessLogSink, loadAccessLogService } from '../src/observability/access-log-sink.ts';

const logger = pino({ level: 'silent' });

async function startSink(t: TestContext, maxLabelSets?: number): Promise<{ sink: AccessLogSink; registry: Registry }> {
  const registry = new Registry();
  const sink = new AccessLogSink({
    port: 0,
    host: '127.0.0.1',
    registry,
    logger,
    ...(maxLabelSets !== undefined ? { maxLabelSets } : {}),
  });
  await sink.start();
  t.after(() => sink.stop());
  return { sink, registry };
}

type StreamClient = Client & { StreamAccessLogs(cb: (err: Error | null) => void): ClientWritableStream<unknown> };

/** Streams `messages` over one StreamAccessLogs call, as Envoy does, and waits for the server to close it. */
async function streamLogs(t: TestContext, port: number, messages: readonly unknown[]): Promise<void> {
  const AccessLogService = loadAccessLogService();
  const client = new AccessLogService(`localhost:${port}`, credentials.createInsecure()) as unknown as StreamClient;
  t.after(() => client.close());
  await new Promise<void>((resolve, reject) => {
    const call = client.StreamAccessLogs((err) => (err ? reject(err) : resolve()));
    for (const message of messages) call.write(message);
    call.end();
  });
}

const identifier = {
  node: { id: 'sidecar~10.1.0.7~productpage-v1.bookinfo~bookinfo.svc.cluster.local' },
  log_name: 'als',
};

function httpEntry(source: string, upstreamCluster: string, code: number, authority = 'reviews:9080'): unknown {
  return {
    common_properties: {
      downstream_remote_address: { socket_address: { address: '10.1.0.7', port_value: 40312 } },
      tls_properties: { peer_certificate_properties: { subject_alt_name: [{ uri: source }] } },
      upstream_cluster: upstreamCluster,
    },
    request: { authority, path: '/reviews/1', request_method: 'GET' },
    response: { response_code: { value: code } },
  };
}

async function sampleValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values =
    (metric as { values?: { value: number; labels: Record<string, string | number> }[] } | undefined)?.values ?? [];
  return values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))?.value;
}

test('given HTTP access logs streamed by an Envoy client, when they arrive, then requests are counted by peer identity, upstream cluster and code', async (t) => {
  const { sink, registry } = await startSink(t);
  const productpage = 'spiffe://cluster.local/ns/bookinfo/sa/productpage';
  const reviews = 'outbound|9080||reviews.bookinfo.svc.cluster.local';
  await streamLogs(t, sink.port, [
    {
      identifier,
      http_logs: { log_entry: [httpEntry(productpage, reviews, 200), httpEntry(productpage, reviews, 200)] },
    },
    { http_logs: { log_entry: [httpEntry(productpage, reviews, 503)] } },
  ]);
  assert.equal(
    await sampleValue(registry, 'relay_agent_access_log_requests_total', {
      source: productpage,
      destination: reviews,
      response_code: '200',
    }),
    2,
  );
  assert.equal(
    await sampleValue(registry, 'relay_agent_access_log_requests_total', {
      source: productpage,
      destination: reviews,
      response_code: '503',
    }),
    1,
  );
});

test('given entries without mTLS or upstream cluster, when counted, then the source is the remote IP and the destination the authority', async (t) => {
  const { sink, registry } = await startSink(t);
  const plain = {
    common_properties: { downstream_remote_address: { socket_address: { address: '10.9.8.7', port_value: 5555 } } },
    request: { authority: 'ratings.global' },
  };
  await streamLogs(t, sink.port, [{ identifier, http_logs: { log_entry: [plain] } }]);
  assert.equal(
    await sampleValue(registry, 'relay_agent_access_log_requests_total', {
      source: '10.9.8.7',
      destination: 'ratings.global',
      response_code: '0',
    }),
    1,
  );
});

test('given TCP access logs, when they arrive, then connections are counted by source and destination', async (t) => {
  const { sink, registry } = await startSink(t);
  const tcp = {
    common_properties: {
      tls_properties: {
        peer_certificate_properties: {
          subject_alt_name: [{ dns: 'x.example' }, { uri: 'spiffe://cluster.local/ns/db/sa/client' }],
        },
      },
      upstream_cluster: 'outbound|5432||postgres.db.svc.cluster.local',
    },
    connection_properties: { received_bytes: '100', sent_bytes: '200' },
  };
  await streamLogs(t, sink.port, [{ identifier, tcp_logs: { log_entry: [tcp, tcp, tcp] } }]);
  const labels = {
    source: 'spiffe://cluster.local/ns/db/sa/client',
    destination: 'outbound|5432||postgres.db.svc.cluster.local',
  };
  assert.equal(await sampleValue(registry, 'relay_agent_access_log_connections_total', labels), 3);
});

test('given more distinct source/destination pairs than the cap, when counted, then the extra pairs fold into other', async (t) => {
  const { sink, registry } = await startSink(t, 2);
  const entries = ['a', 'b', 'c', 'd'].map((n) =>
    httpEntry(`spiffe://cluster.local/ns/x/sa/${n}`, 'outbound|80||svc', 200),
  );
  await streamLogs(t, sink.port, [{ identifier, http_logs: { log_entry: [...entries, entries[0]] } }]);
  const metric = (await registry.getMetricsAsJSON()).find(
    (m) => m.name === 'relay_agent_access_log_requests_total',
  ) as { values: { labels: Record<string, string> }[] };
  assert.deepEqual(metric.values.map((v) => v.labels['source']).sort(), [
    'other',
    'spiffe://cluster.local/ns/x/sa/a',
    'spiffe://cluster.local/ns/x/sa/b',
  ]);
  assert.equal(
    await sampleValue(registry, 'relay_agent_access_log_requests_total', {
      source: 'other',
      destination: 'other',
      response_code: '200',
    }),
    2,
  );
  assert.equal(
    await sampleValue(registry, 'relay_agent_access_log_requests_total', {
      source: 'spiffe://cluster.local/ns/x/sa/a',
      response_code: '200',
    }),
    2,
  );
});

test('given the sink port is taken, when a second sink starts on it, then the error names --access-log-port', async (t) => {
  const { sink } = await startSink(t);
  const second = new AccessLogSink({ port: sink.port, host: '127.0.0.1', registry: new Registry(), logger });
  await assert.rejects(
    second.start(),
    (err: Error & { code?: string }) =>
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' && /--access-log-port/.test(err.message),
  );
});
