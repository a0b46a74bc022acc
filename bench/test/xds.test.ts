// The xDS bench at a tiny size: the real ADS server in its own process, one real grpc-js-xds
// client and raw ADS streams. Asserts what the figures rest on, never how fast anything was.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TIER_S } from '../workload.ts';
import { runXdsTier } from '../xds.ts';

const TINY = { ...TIER_S, clusters: 2, servicesPerCluster: 10, endpointsPerService: 2, nodesPerCluster: 1 };
const OPTIONS = { streams: 4, realClients: 1, changes: 3, hostsPerStream: 3 };

test(
  'given the xDS bench at a tiny size, when one endpoint changes three times, then every stream ACKs each change and the bytes each raw stream received are counted',
  { timeout: 180_000 },
  async () => {
    const r = await runXdsTier('tiny', TINY, OPTIONS);

    assert.match(r.changedListener, /^svc-000\.shop\.svc\.cluster\.local:\d+$/);
    assert.deepEqual(r.ackedPerChange, [4, 4, 4], 'every stream (the real client among them) ACKed every change');
    assert.equal(r.changeMs.length, 3);
    assert.equal(r.fullPushBytes.length, 3, 'one full-push count per raw stream');
    assert.ok(
      r.fullPushBytes.every((b) => b > 0),
      `full push bytes ${r.fullPushBytes.join(', ')}`,
    );
    assert.equal(r.changeBytes.length, 9, 'one count per change and raw stream');
    assert.ok(
      r.changeBytes.every((b) => b > 0),
      `change bytes ${r.changeBytes.join(', ')}`,
    );
    assert.ok(r.rssIdleKiB > 0 && r.rssStreamsKiB > 0);
  },
);
