// Replicas must agree on provenance, not only on output bytes: the split-brain rule compares the
// agent epochs it carries. An agent that restarts pushes the same content (same input hash) under a
// new epoch to the replica it reaches; the other replica learns of it through Redis.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { Mesh, type ServerProc } from './mesh.ts';

interface ProvenanceEntry {
  readonly cluster: string;
  readonly inputHash: string;
  readonly epoch?: string;
  readonly generation?: number;
}

async function provenanceOf(
  mesh: Mesh,
  server: ServerProc,
  output: string,
  input: string,
): Promise<ProvenanceEntry | undefined> {
  const snapshot = await mesh.api<{ provenance: ProvenanceEntry[] }>(`/api/v1/clusters/${output}/output`, server);
  return snapshot.provenance.find((p) => p.cluster === input);
}

test(
  "given two replicas sharing Redis, when an agent restarts and pushes the same content to one of them, then both name its new epoch in every output's provenance",
  { timeout: 240_000 },
  async (t) => {
    const mesh = await Mesh.start(t);
    const s0 = await mesh.startServer('mgmt-0');
    const s1 = await mesh.startServer('mgmt-1');
    for (const c of ['cluster-a', 'cluster-b']) await mesh.register(c);
    await mesh.startAgent('cluster-a', { from: 'cluster-a', servers: [s0] });
    await mesh.startAgent('cluster-b', { from: 'cluster-b', servers: [s1] });
    for (const c of ['cluster-a', 'cluster-b'])
      await mesh.waitForOutput(c, (o) => o.provenance.length === 2, 30_000, `first output of ${c}`);
    const before = await provenanceOf(mesh, s1, 'cluster-b', 'cluster-a');
    assert.ok(before?.epoch, 'provenance names the first epoch');

    await mesh.agents.get('cluster-a')?.proc.kill();
    await mesh.startAgent('cluster-a', { keepDirs: true, servers: [s0] });
    let restarted: ProvenanceEntry | undefined;
    await waitFor(
      async () => {
        restarted = await provenanceOf(mesh, s0, 'cluster-a', 'cluster-a');
        return restarted?.epoch !== undefined && restarted.epoch !== before.epoch;
      },
      { timeoutMs: 30_000, intervalMs: 100, message: 'the replica the agent reached never named its new epoch' },
    );

    assert.equal(restarted?.inputHash, before.inputHash, 'the restarted agent pushed the same content');
    for (const server of [s0, s1]) {
      for (const output of ['cluster-a', 'cluster-b']) {
        await waitFor(async () => (await provenanceOf(mesh, server, output, 'cluster-a'))?.epoch === restarted?.epoch, {
          timeoutMs: 15_000,
          intervalMs: 100,
          message: `${server.name} names another epoch of cluster-a in ${output}'s output: ${JSON.stringify(await provenanceOf(mesh, server, output, 'cluster-a'))} (the agent's is ${restarted?.epoch})`,
        });
      }
    }
  },
);
