// DESIGN §7 "agent leader dies": two agent processes of cluster-a share a lease
// file and a state dir; the leader is killed with SIGKILL, the other takes the
// lease within one lease duration (+ retry period) and resumes push/pull.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor, type ProcessHandle } from '@meshrelay/testkit';
import { Mesh, hasResource, virtualDestinationYaml, type AgentProc } from './mesh.ts';

const LEASE_MS = 3_000;
const RETRY_MS = 500;

interface AgentStatus {
  replica: string;
  leader: boolean;
  leaderHolder: string | null;
  input: { epoch: string; generation: number; hash: string } | null;
}

/** The health port an agent process logged at start (it listens on port 0). */
async function healthPort(proc: ProcessHandle): Promise<number> {
  const line = await proc.waitForLine(/"relay agent started"/, 30_000);
  return (JSON.parse(line) as { healthPort: number }).healthPort;
}

async function status(port: number): Promise<AgentStatus> {
  return (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as AgentStatus;
}

/** The pino `time` of the first line matching `pattern`, once there is one. */
async function loggedAt(proc: ProcessHandle, pattern: RegExp, timeoutMs: number): Promise<number> {
  const line = await proc.waitForLine(pattern, timeoutMs);
  return (JSON.parse(line) as { time: number }).time;
}

test('given two cluster-a agents on one lease file, when the leader is killed, then the other takes the lease within the lease duration and relays without a refused snapshot', async (t) => {
  const mesh = await Mesh.start(t);
  await mesh.startServer();
  await mesh.register('cluster-a');
  await mesh.register('cluster-b');
  const leaseFlags = (replica: string): string[] => [
    '--leader-election',
    'file',
    '--lease-file',
    join(mesh.dir, 'leases', 'cluster-a.lease'),
    '--lease-duration',
    `${LEASE_MS}ms`,
    '--renew-deadline',
    '2s',
    '--retry-period',
    `${RETRY_MS}ms`,
    '--replica-id',
    replica,
  ];
  // Both start at once and race for the lease; the second shares the first one's dirs.
  const replicas = new Map<string, AgentProc>([
    ['a-1', await mesh.startAgent('cluster-a', { from: 'cluster-a', extraFlags: leaseFlags('a-1') })],
    ['a-2', await mesh.startAgent('cluster-a', { name: 'cluster-a-2', keepDirs: true, extraFlags: leaseFlags('a-2') })],
  ]);
  await mesh.startAgent('cluster-b', { from: 'cluster-b' });
  const ports = new Map<string, number>();
  for (const [id, agent] of replicas) ports.set(id, await healthPort(agent.proc));

  // Exactly one leads, and the other knows which.
  let leaderId = '';
  await waitFor(
    async () => {
      const all = await Promise.all([...ports].map(async ([id, port]) => ({ id, s: await status(port) })));
      const leaders = all.filter((r) => r.s.leader);
      if (leaders.length !== 1) return false;
      leaderId = leaders[0]?.id ?? '';
      return all.every((r) => r.s.leaderHolder === leaderId);
    },
    { timeoutMs: 20_000, message: 'not exactly one leader seen by both replicas' },
  );
  const followerId = leaderId === 'a-1' ? 'a-2' : 'a-1';
  const leader = replicas.get(leaderId) as AgentProc;
  const follower = replicas.get(followerId) as AgentProc;
  for (const cluster of ['cluster-a', 'cluster-b']) {
    await mesh.waitForOutput(cluster, (o) => o.provenance.length === 2, 30_000, `first output of ${cluster}`);
  }
  assert.equal((await status(ports.get(followerId) as number)).input, null, 'the follower discovers nothing');
  const epochBefore = (await mesh.api<{ epoch: string }>('/api/v1/clusters/cluster-a/input')).epoch;

  // kill -9: no release, so the follower must wait for the lease to expire.
  const killedAt = Date.now();
  await leader.proc.kill();
  // The dead leader's last renewal, as its lease file keeps it: under load a renewal can come later
  // than one retry period after the one before, so the kill alone does not say when the lease ends.
  const lastRenewedAt = Date.parse(
    (JSON.parse(readFileSync(join(mesh.dir, 'leases', 'cluster-a.lease'), 'utf8')) as { renewTime: string }).renewTime,
  );
  const tookOverAt = await loggedAt(follower.proc, /"became leader"/, LEASE_MS + 10_000);
  const tookMs = tookOverAt - killedAt;
  t.diagnostic(
    `the follower took the lease ${tookMs} ms after the kill, ${tookOverAt - lastRenewedAt} ms after the last renewal`,
  );
  assert.ok(
    tookMs <= LEASE_MS + RETRY_MS + 500,
    `took the lease ${tookMs} ms after the kill; lease ${LEASE_MS} ms + retry ${RETRY_MS} ms`,
  );
  assert.ok(
    tookOverAt >= lastRenewedAt + LEASE_MS,
    `took the lease ${tookOverAt - lastRenewedAt} ms after the dead leader's last renewal, before its ${LEASE_MS} ms lease had expired`,
  );

  // A change made after the kill reaches cluster-b through the new leader.
  mesh.writeManifest('cluster-a', 'vd-ratings.yaml', virtualDestinationYaml('ratings', 'ratings.global'));
  const out = await mesh.waitForOutput(
    'cluster-b',
    (o) => hasResource(o, 'ServiceEntry', 'ratings'),
    30_000,
    "cluster-a's change after the handover",
  );

  // No duplicate or stale push: the server refused nothing, and its held inputs are what the output was built from.
  const serverLines = mesh.servers.flatMap((s) => s.proc.lines);
  assert.deepEqual(
    serverLines.filter((l) => l.includes('MESHRELAY_ERR_SNAPSHOT_STALE') || l.includes('push refused a snapshot')),
    [],
  );
  const inputA = await mesh.api<{ hash: string; epoch: string; generation: number }>(
    '/api/v1/clusters/cluster-a/input',
  );
  const inputB = await mesh.api<{ hash: string }>('/api/v1/clusters/cluster-b/input');
  assert.deepEqual(
    out.provenance.map((p) => ({ cluster: p.cluster, inputHash: p.inputHash })),
    [
      { cluster: 'cluster-a', inputHash: inputA.hash },
      { cluster: 'cluster-b', inputHash: inputB.hash },
    ],
  );
  assert.notEqual(inputA.epoch, epochBefore, 'the new leader pushes a new epoch');
  const newLeader = await status(ports.get(followerId) as number);
  assert.equal(newLeader.leader, true);
  assert.equal(newLeader.input?.hash, inputA.hash);
  assert.equal(newLeader.input?.epoch, inputA.epoch);
  // The new leader reused the persisted client certificate: it never registered.
  assert.equal(follower.proc.lines.filter((l) => l.includes('registering with the relay token')).length, 0);
});
