/** The agent's data-plane report: bounded, sent when it changed (at most once per interval), resent on a new stream. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { relay } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import type { ProxyStatus } from '../src/xds/ads-stream.ts';
import { DataPlaneReporter, REPORT_LIMITS, buildDataPlaneReport } from '../src/xds/data-plane-reporter.ts';

function proxy(nodeId: string, acked = 'v1'): ProxyStatus {
  return {
    nodeId,
    locality: { region: 'us-east', zone: 'us-east-1a' },
    subscribed: { cds: Array.from({ length: 30 }, (_, i) => `outbound|9080|v${i}|reviews.bookinfo.svc.cluster.local`) },
    ackedVersion: { cds: acked },
    nacks: 1,
    lastNack: {
      typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
      version: 'v2',
      reason: 'x'.repeat(2000),
      at: '2026-11-29T01:00:00.000Z',
    },
  };
}

test('given more proxies, names and text than a report carries, then it is bounded and counts what it left out', () => {
  const proxies = Array.from({ length: REPORT_LIMITS.proxies + 7 }, (_, i) =>
    proxy(`node-${String(i).padStart(4, '0')}`),
  );
  const report = buildDataPlaneReport(true, proxies, [], 1);
  assert.equal(report.proxies?.length, REPORT_LIMITS.proxies);
  assert.equal(report.proxiesNotListed, 7);
  const [first] = report.proxies ?? [];
  assert.equal(first?.nodeId, 'node-0000');
  assert.equal(first?.locality, 'us-east/us-east-1a');
  assert.equal(first?.types?.['cds']?.names?.length, REPORT_LIMITS.namesPerType);
  assert.equal(first?.types?.['cds']?.subscribed, 30);
  assert.equal(first?.lastNack?.reason?.length, REPORT_LIMITS.text);
  assert.equal(first?.lastNack?.atUnixMs, Date.parse('2026-11-29T01:00:00.000Z'));
});

test('given changes, then the reporter sends only when the report differs, at most once per interval, and again on a new stream', async (t) => {
  let current = [proxy('a')];
  const sent: relay.v1.IDataPlaneReport[] = [];
  let open = false;
  const reporter = new DataPlaneReporter({
    build: () => buildDataPlaneReport(true, current, [], Date.now()),
    send: (r) => (open ? (sent.push(r), true) : false),
    minIntervalMs: 200,
  });
  t.after(() => reporter.stop());

  reporter.changed();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(sent.length, 0, 'sent while no stream was open');

  open = true;
  reporter.streamOpened();
  await waitFor(() => sent.length === 1, { timeoutMs: 2_000, message: 'the first report never went out' });

  // The same content again: nothing to send.
  reporter.changed();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(sent.length, 1);

  // Three changes in a burst: one report, with the last of them.
  current = [proxy('a', 'v2')];
  reporter.changed();
  current = [proxy('a', 'v3')];
  reporter.changed();
  current = [proxy('a', 'v4')];
  reporter.changed();
  await waitFor(() => sent.length === 2, { timeoutMs: 2_000, message: 'the burst never went out' });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(sent.length, 2);
  assert.equal(sent[1]?.proxies?.[0]?.types?.['cds']?.ackedVersion, 'v4');

  // A new stream (maybe another replica) gets the unchanged report again.
  reporter.streamOpened();
  await waitFor(() => sent.length === 3, { timeoutMs: 2_000, message: 'a new stream did not get the report' });
});
