// An honest agent whose delta passes a server's patch limits: the server refuses it naming the
// limit (MESHRELAY_ERR_DELTA_LIMIT) and the agent sends the same snapshot full, which is taken.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot, snapshotEncoding, type Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { logged, service, startClient, startRelay } from './support/relay-harness.ts';

const input = (generation: number, resources: Resource[]) =>
  buildInputSnapshot({ cluster: 'east', epoch: 'epoch-1', generation, resources });
const services = (n: number) => Array.from({ length: n }, (_, i) => service(`svc-${i}`));

test(
  "given a server that takes one patch operation per resource, when an agent's delta patches a resource with two, then the server refuses it with MESHRELAY_ERR_DELTA_LIMIT and the agent sends the snapshot full, which is taken",
  { timeout: 60_000 },
  async (t) => {
    const relay = await startRelay(t, { flags: ['--max-resource-patch-ops', '1'] });
    const harness = await startClient(t, [relay]);
    harness.setLatest(input(2, services(300)));
    await waitFor(() => harness.acks.at(-1)?.generation === 2, { timeoutMs: 10_000 });
    // Two fields of one Service change: its patch is two operations.
    const changed = services(300).map((r) =>
      r.metadata.name === 'svc-7'
        ? {
            ...r,
            metadata: { ...r.metadata, labels: { tier: 'web' } },
            spec: { ...(r.spec as object), ports: [{ name: 'http', port: 9999, protocol: 'TCP' }] },
          }
        : r,
    );
    const next = input(3, changed);
    harness.setLatest(next);
    await waitFor(() => relay.stored.at(-1)?.generation === 3, { timeoutMs: 10_000 });
    assert.ok(
      logged(harness.lines, /^server refused the delta at a patch limit; resending the snapshot full$/),
      'the agent saw the refusal and went full',
    );
    assert.equal(relay.stored.at(-1)?.hash, next.hash);
    assert.equal(snapshotEncoding(relay.stored.at(-1) as typeof next), snapshotEncoding(next));
    await waitFor(() => harness.acks.at(-1)?.generation === 3, { timeoutMs: 10_000 });
    assert.equal(harness.acks.at(-1)?.accepted, true);
    assert.equal(
      harness.acks.filter((a) => a.errorCode === 'MESHRELAY_ERR_DELTA_LIMIT').length,
      0,
      "the refusal of the delta is not the agent's final word",
    );
  },
);
