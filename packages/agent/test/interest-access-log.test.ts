// Access logs as a source of interest (DESIGN §17): the hosts Envoy's entries name reach the
// tracker, which tells the plane at once about a host it had not reported.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { credentials, type Client, type ClientWritableStream } from '@grpc/grpc-js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { relay } from '@meshrelay/api';
import { InterestTracker } from '../src/interest/interest-tracker.ts';
import { AccessLogSink, loadAccessLogService } from '../src/observability/access-log-sink.ts';

type StreamClient = Client & { StreamAccessLogs(cb: (err: Error | null) => void): ClientWritableStream<unknown> };

test(
  'given an access-log sink feeding a tracker, when Envoy logs calls to two upstreams, then both hosts are reported as learned from access logs',
  { timeout: 60_000 },
  async (t) => {
    const reports: relay.v1.IInterestReport[] = [];
    const tracker = new InterestTracker({ send: (r) => reports.push(r) > 0, renewIntervalMs: 60_000 });
    const sink = new AccessLogSink({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      logger: pino({ level: 'silent' }),
      onDestination: (destination) => tracker.used(destination),
    });
    await sink.start();
    t.after(() => sink.stop());
    const AccessLogService = loadAccessLogService();
    const client = new AccessLogService(
      `localhost:${sink.port}`,
      credentials.createInsecure(),
    ) as unknown as StreamClient;
    t.after(() => client.close());
    await new Promise<void>((resolve, reject) => {
      const call = client.StreamAccessLogs((err) => (err ? reject(err) : resolve()));
      call.write({
        identifier: { node: { id: 'sidecar~10.1.0.7~app.shop~shop.svc.cluster.local' }, log_name: 'als' },
        http_logs: {
          log_entry: [
            { common_properties: { upstream_cluster: 'outbound|9080||reviews.global' }, request: {} },
            { common_properties: {}, request: { authority: 'ratings.global:9080' } },
            { common_properties: { upstream_cluster: 'outbound|9080||reviews.global' }, request: {} },
          ],
        },
      });
      call.end();
    });
    const hosts = reports.flatMap((r) => (r.hosts ?? []).map((h) => `${h.host}/${h.source}`));
    assert.deepEqual(hosts, ['reviews.global/access-log', 'ratings.global/access-log']);
  },
);
