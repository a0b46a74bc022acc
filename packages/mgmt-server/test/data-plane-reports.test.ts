/**
 * Data-plane reports are shared between replicas: an agent reports to one, every replica lists it
 * (through the shared document store), a disconnected agent's report stays marked as such, and a
 * replica restarting drops the records it left.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { DirectoryDocumentStore } from '@meshrelay/registry';
import { waitFor } from '@meshrelay/testkit';
import { DataPlaneReports } from '../src/data-plane-reports.ts';

const logger = pino({ level: 'silent' });
const report = (nodeId: string) => ({
  serving: true,
  proxies: [{ nodeId, locality: 'eu/eu-1a', types: { lds: { names: ['a:1'], subscribed: 1, ackedVersion: 'v1' } } }],
  findings: [],
});

test(
  'given two replicas sharing a document store, then a report taken in by one is listed by the other',
  { timeout: 60_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'meshrelay-data-plane-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const a = new DataPlaneReports(new DirectoryDocumentStore(dir), 'replica-a', logger);
    const b = new DataPlaneReports(new DirectoryDocumentStore(dir), 'Replica_B', logger);
    a.start();
    b.start();
    t.after(() => Promise.all([a.stop(), b.stop()]));

    a.record('east', report('client-1'), new Date());
    await waitFor(() => b.list().some((r) => r.cluster === 'east'), {
      timeoutMs: 15_000,
      message: 'replica B never saw the report',
    });
    const seen = b.list().find((r) => r.cluster === 'east');
    assert.equal(seen?.replica, 'replica-a');
    assert.equal(seen?.agentConnected, true);
    assert.deepEqual(
      seen?.proxies.map((p) => p.nodeId),
      ['client-1'],
    );

    // The agent moves to B: B's own connected report wins over A's, which A marks disconnected.
    a.disconnected('east');
    b.record('east', report('client-2'), new Date());
    await waitFor(() => b.list().find((r) => r.cluster === 'east')?.proxies[0]?.nodeId === 'client-2', {
      timeoutMs: 15_000,
      message: 'B did not prefer its own report',
    });
    await waitFor(() => a.list().find((r) => r.cluster === 'east')?.proxies[0]?.nodeId === 'client-2', {
      timeoutMs: 15_000,
      message: 'A did not prefer the connected report on B',
    });

    // A replica that restarts drops the records of its earlier run (its memory starts empty).
    const store = new DirectoryDocumentStore(dir);
    await waitFor(async () => (await store.list()).some((d) => d.name === 'east.replica-a'), {
      timeoutMs: 15_000,
      message: 'A never mirrored its record',
    });
    await a.stop();
    const restarted = new DataPlaneReports(store, 'replica-a', logger);
    restarted.start();
    t.after(() => restarted.stop());
    await waitFor(async () => !(await store.list()).some((d) => d.name === 'east.replica-a'), {
      timeoutMs: 15_000,
      message: 'the restarted replica left its old record',
    });
    assert.ok(
      (await store.list()).some((d) => d.name === 'east.replica-b'),
      "B's record stays",
    );
  },
);
