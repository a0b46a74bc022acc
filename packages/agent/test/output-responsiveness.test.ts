import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { buildOutputSnapshot, type Resource } from '@meshrelay/api';
import { startHealthProbe, startHeartbeatProbe, waitFor } from '@meshrelay/testkit';
import { FileOutputWriter } from '../src/apply/output-writer.ts';
import { captureLogger } from './support/fixtures.ts';
import { startClient, startRelay } from './support/relay-harness.ts';

/** Longest pause of heartbeats or /healthz answers allowed while the output is taken in (heartbeats every 100 ms). */
const MAX_GAP_MS = 1000;

/** ServiceEntries as a large mesh gives one cluster: each with 40 endpoints across 4 clusters (~8 MiB for 2,000). */
function serviceEntries(count: number): Resource[] {
  return Array.from({ length: count }, (_, i) => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: {
      name: `vd-${i}`,
      namespace: `team-${i % 20}`,
      labels: { 'reconciler.mesh.gloo.solo.io/name': 'meshrelay' },
    },
    spec: {
      hosts: [`svc-${i}.global`],
      addresses: [`10.30.${Math.floor(i / 250)}.${i % 250}`],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ name: 'http', number: 8080, protocol: 'HTTP' }],
      endpoints: Array.from({ length: 40 }, (_, j) => ({
        address: `10.${j % 4}.${i % 250}.${j + 1}`,
        labels: { app: `svc-${i}`, cluster: `cluster-${j % 4}` },
        locality: `region-${j % 4}/zone-${j % 2}`,
        network: `network-${j % 4}`,
        ports: { http: 8080 },
      })),
    },
  })) as unknown as Resource[];
}

test('given an 8 MiB output being taken in and written by the agent, when another stream heartbeats and /healthz is polled, then neither pauses for long', async (t) => {
  const relay = await startRelay(t, { flags: ['--heartbeat-interval', '100ms', '--heartbeat-timeout', '10s'] });
  const dir = await mkdtemp(path.join(tmpdir(), 'meshrelay-large-output-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const writer = new FileOutputWriter({
    cluster: 'east',
    outputDir: path.join(dir, 'out'),
    stateDir: path.join(dir, 'state'),
    logger: captureLogger().logger,
  });
  const output = buildOutputSnapshot({ cluster: 'east', resources: serviceEntries(2000), provenance: [] });
  assert.ok(output.bytes > 8 * 1024 * 1024, `the output has ${output.bytes} bytes`);
  await startClient(t, [relay], {
    latestSnapshot: () => undefined,
    heldOutput: () => writer.held,
    applyOutput: async (o) =>
      void (await writer.apply({ cluster: 'east', hash: o.hash, provenance: o.provenance, resources: o.resources })),
    maxSnapshotBytes: 24 * 1024 * 1024,
    heartbeatTimeoutMs: 10_000,
  });
  await waitFor(() => relay.server.connections.streams('east').some((s) => s.kind === 'pull'), { timeoutMs: 10_000 });
  const { token } = await relay.server.registry.register('probe', {});
  const heartbeats = await startHeartbeatProbe(t, {
    address: `localhost:${relay.server.relayPort}`,
    caPem: relay.caPem,
    token,
    cluster: 'probe',
  });
  const health = startHealthProbe(t, `http://127.0.0.1:${relay.server.httpPort}/healthz`);

  heartbeats.reset();
  health.reset();
  relay.server.outputs.publish(output);
  await waitFor(() => relay.server.connections.applied('east') === output.hash, { timeoutMs: 120_000 });
  const [beat, answer] = [heartbeats.window(), health.window()];
  t.diagnostic(`longest pause: heartbeats ${Math.round(beat.maxGapMs)} ms, /healthz ${Math.round(answer.maxGapMs)} ms`);

  assert.equal(writer.heldHash, output.hash);
  assert.equal((await readdir(writer.currentPath)).length, 2001, 'one file per resource plus snapshot.json');
  assert.ok(
    beat.count > 0 && beat.maxGapMs < MAX_GAP_MS,
    `heartbeats of the other stream paused up to ${Math.round(beat.maxGapMs)} ms (${beat.count} arrived)`,
  );
  assert.ok(
    answer.count > 0 && answer.maxGapMs < MAX_GAP_MS,
    `/healthz paused up to ${Math.round(answer.maxGapMs)} ms (${answer.count} answers)`,
  );
  assert.equal(answer.failures, 0);
});
