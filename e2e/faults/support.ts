// Shared set-up for the fault suite: Redis, two management replicas and three
// agents (cluster-a, cluster-b from examples/, cluster-c from a fixture), each
// agent knowing both replicas, spread so both replicas carry agents.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { Mesh, makeClusterC, type MeshOptions, type OutputOnDisk, type ServerProc } from '../mesh.ts';

export const CLUSTERS = ['cluster-a', 'cluster-b', 'cluster-c'] as const;

export interface ClusterApiView {
  name: string;
  connection: { connected: boolean; push: number; pull: number };
  input: { hash: string; epoch: string; stale: boolean } | null;
  output: { hash: string; held: boolean; appliedHash: string | null } | null;
}

export interface SafeModeView {
  active: boolean;
  mode: string | null;
  missing: string[];
  windowEndsAt: string | null;
  /** Absent clusters whose last known contribution the replica carries over (DESIGN §13). */
  staleContributions: { cluster: string; inputHash: string; generation: number; since: string }[];
}

export async function faultMesh(
  t: TestContext,
  serverFlags: string[] = [],
  registry: MeshOptions['registry'] = 'file',
): Promise<{ mesh: Mesh; s0: ServerProc; s1: ServerProc }> {
  const mesh = await Mesh.start(t, { serverFlags, registry });
  const s0 = await mesh.startServer('mgmt-0');
  const s1 = await mesh.startServer('mgmt-1');
  for (const c of CLUSTERS) await mesh.register(c);
  await mesh.startAgent('cluster-a', { from: 'cluster-a', servers: [s0, s1] });
  await mesh.startAgent('cluster-b', { from: 'cluster-b', servers: [s1, s0] });
  await mesh.startAgent('cluster-c', { from: makeClusterC(mesh.dir), servers: [s0, s1] });
  for (const c of CLUSTERS)
    await mesh.waitForOutput(c, (o) => o.provenance.length === 3, 30_000, `first full output of ${c}`);
  // Tests compare applied counts against these, so every apply must be counted.
  for (const c of CLUSTERS) await mesh.waitForAppliedLogged(c);
  return { mesh, s0, s1 };
}

/** Kills cluster-c's agent, Redis and both replicas; brings Redis and the replicas back (empty). */
export async function restartPlaneWithoutC(
  mesh: Mesh,
  s0: ServerProc,
  s1: ServerProc,
): Promise<[ServerProc, ServerProc]> {
  await mesh.agents.get('cluster-c')?.proc.kill();
  await Promise.all([s0.proc.kill(), s1.proc.kill()]);
  await mesh.redis?.kill();
  await mesh.redis?.restart();
  return [await mesh.restartServer(s0), await mesh.restartServer(s1)];
}

export function outputs(mesh: Mesh): Map<string, OutputOnDisk | undefined> {
  return new Map(CLUSTERS.map((c) => [c, mesh.readOutput(c)]));
}

export function appliedCounts(mesh: Mesh): Map<string, number> {
  return new Map(CLUSTERS.map((c) => [c, mesh.appliedCount(c)]));
}

export async function clusterView(mesh: Mesh, cluster: string, server?: ServerProc): Promise<ClusterApiView> {
  return mesh.api<ClusterApiView>(`/api/v1/clusters/${cluster}`, server);
}

/**
 * The provenance invariant: an applied output was built from exactly the given
 * clusters, each at the input hash the server holds for it now — or, for an
 * entry marked stale, at the hash of the contribution the server carries over
 * for that absent cluster (never an input the gate admitted).
 */
export async function assertProvenance(
  mesh: Mesh,
  output: OutputOnDisk | undefined,
  clusters: readonly string[],
  server?: ServerProc,
): Promise<void> {
  assert.ok(output, 'an output is applied');
  assert.deepEqual(
    output.provenance.map((p) => p.cluster),
    [...clusters].sort(),
  );
  for (const p of output.provenance as readonly { cluster: string; inputHash: string; stale?: boolean }[]) {
    if (p.stale === true) {
      const carried = server ? (await safeMode(mesh, server)).staleContributions : [];
      assert.equal(
        p.inputHash,
        carried.find((c) => c.cluster === p.cluster)?.inputHash,
        `stale provenance of ${p.cluster} matches its carried contribution`,
      );
      continue;
    }
    const view = await clusterView(mesh, p.cluster, server);
    assert.equal(p.inputHash, view.input?.hash, `provenance of ${p.cluster} matches its held input`);
  }
}

export async function waitForConnected(
  mesh: Mesh,
  server: ServerProc,
  clusters: readonly string[],
  timeoutMs = 20_000,
): Promise<void> {
  await waitFor(
    async () => {
      const views = await Promise.all(clusters.map((c) => clusterView(mesh, c, server)));
      return views.every((v) => v.connection.push > 0 && v.connection.pull > 0);
    },
    { timeoutMs, intervalMs: 200, message: `${clusters.join(', ')} did not connect to ${server.name}` },
  );
}

export async function safeMode(mesh: Mesh, server: ServerProc): Promise<SafeModeView> {
  return mesh.api<SafeModeView>('/api/v1/safe-mode', server);
}

/** Waits until each cluster has push and pull streams open on some running replica. */
export async function waitForConnectedAnywhere(
  mesh: Mesh,
  clusters: readonly string[],
  timeoutMs = 20_000,
): Promise<void> {
  await waitFor(
    async () => {
      for (const c of clusters) {
        const views = await Promise.all(mesh.servers.filter((s) => s.proc.running).map((s) => clusterView(mesh, c, s)));
        if (!views.some((v) => v.connection.push > 0 && v.connection.pull > 0)) return false;
      }
      return true;
    },
    { timeoutMs, intervalMs: 200, message: `${clusters.join(', ')} did not reconnect` },
  );
}

/**
 * Waits until each replica's gate is open, it holds the inputs of cluster-a and cluster-b again (so
 * an output built next carries only cluster-c over), and it has built cluster-a's output.
 */
export async function waitForTranslationAfterWindow(mesh: Mesh, servers: readonly ServerProc[]): Promise<void> {
  for (const server of servers) {
    await waitFor(
      async () =>
        !(await safeMode(mesh, server)).active &&
        (await Promise.all(['cluster-a', 'cluster-b'].map((c) => clusterView(mesh, c, server)))).every(
          (v) => v.input !== null,
        ) &&
        (await clusterView(mesh, 'cluster-a', server)).output !== null,
      {
        timeoutMs: 20_000,
        message: `${server.name} did not translate after the window with cluster-a and cluster-b back`,
      },
    );
  }
}
