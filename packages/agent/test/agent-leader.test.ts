import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { FileLeaseStore } from '@meshrelay/kube';
import { startFakeKubeApiServer, waitFor } from '@meshrelay/testkit';
import { Agent } from '../src/agent.ts';
import type { AgentConfig } from '../src/config.ts';
import { captureLogger, serviceYaml } from './support/fixtures.ts';
import { settled, startRelay, type RelayUnderTest } from './support/relay-harness.ts';

const LEASE = { leaseDurationMs: 900, renewDeadlineMs: 600, retryPeriodMs: 100 };

/** Agents started in a test; stopped before the shared directory is removed (their leases renew until then). */
const running = new WeakMap<TestContext, Agent[]>();

/** Config of two replicas of cluster "east" that share manifests, output, state dir and lease file. */
async function replicaConfigs(
  t: TestContext,
  relay: RelayUnderTest,
): Promise<{ configs: AgentConfig[]; root: string }> {
  const root = await mkdtemp(path.join(tmpdir(), 'meshrelay-agent-'));
  running.set(t, []);
  t.after(async () => {
    for (const agent of running.get(t) ?? []) await agent.stop();
    await rm(root, { recursive: true, force: true });
  });
  const manifestsDir = path.join(root, 'manifests');
  await mkdir(manifestsDir);
  await writeFile(path.join(manifestsDir, 'reviews.yaml'), serviceYaml('reviews'));
  await writeFile(path.join(root, 'ca.pem'), relay.caPem);
  await writeFile(path.join(root, 'token'), `${relay.token}\n`);
  const base: AgentConfig = {
    cluster: 'east',
    serverAddresses: [relay.address],
    tokenFile: path.join(root, 'token'),
    rootCaFile: path.join(root, 'ca.pem'),
    discoveryProvider: 'file',
    apply: 'file',
    manifestsDir,
    outputDir: path.join(root, 'output'),
    stateDir: path.join(root, 'state'),
    credentialsNamespace: 'gloo-mesh',
    debounceMs: 20,
    rescanIntervalMs: 60_000,
    healthPort: 0,
    heartbeatIntervalMs: 100,
    heartbeatTimeoutMs: 600,
    logLevel: 'debug',
    maxSnapshotBytes: 1024 * 1024,
    accessLogPort: 0,
    leaderElection: 'file',
    leaseFile: path.join(root, 'leader.lease'),
    leaseName: 'meshrelay-agent-east',
    leaseNamespace: 'gloo-mesh',
    ...LEASE,
    replicaId: 'east-0',
  };
  return { configs: [base, { ...base, replicaId: 'east-1' }], root };
}

interface Replica {
  readonly agent: Agent;
  readonly lines: Array<Record<string, unknown>>;
  readonly id: string;
  status(): Promise<Record<string, unknown>>;
  metrics(): Promise<string>;
}

async function startReplica(t: TestContext, config: AgentConfig): Promise<Replica> {
  const { logger, lines } = captureLogger();
  const agent = new Agent(config, logger, {
    backoff: { baseMs: 20, capMs: 200 },
    defaultMetrics: false,
    healthHost: '127.0.0.1',
  });
  running.get(t)?.push(agent);
  await agent.start();
  const get = (route: string) => fetch(`http://127.0.0.1:${agent.healthPort}${route}`);
  return {
    agent,
    lines,
    id: config.replicaId,
    status: async () => (await (await get('/status')).json()) as Record<string, unknown>,
    metrics: async () => (await get('/metrics')).text(),
  };
}

async function leaderOf(replicas: readonly Replica[]): Promise<{ leader: Replica; follower: Replica }> {
  let leader: Replica | undefined;
  await waitFor(() => (leader = replicas.find((r) => r.agent.status().leadership.leader)) !== undefined, {
    timeoutMs: 5_000,
    message: 'no replica became leader',
  });
  return { leader: leader as Replica, follower: replicas.find((r) => r !== leader) as Replica };
}

const registrations = (replicas: readonly Replica[]) =>
  replicas.flatMap((r) => r.lines).filter((l) => l['msg'] === 'registering with the relay token').length;

function applied(replica: Replica): number {
  return replica.lines.filter((l) => l['msg'] === 'output applied').length;
}

test('given two replicas on one lease file, when both start, then only the leader relays and both report who leads', async (t) => {
  const relay = await startRelay(t);
  const { configs } = await replicaConfigs(t, relay);
  const replicas = [await startReplica(t, configs[0] as AgentConfig), await startReplica(t, configs[1] as AgentConfig)];
  const { leader, follower } = await leaderOf(replicas);
  await waitFor(() => relay.stored.length > 0, { message: 'the leader pushed nothing' });
  await waitFor(async () => (await follower.status())['leaderHolder'] === leader.id, {
    message: 'the follower does not see the holder',
  });
  const [leaderStatus, followerStatus] = [await leader.status(), await follower.status()];
  assert.equal(leaderStatus['leader'], true);
  assert.equal(followerStatus['leader'], false);
  assert.equal(followerStatus['input'], null, 'a follower discovers nothing');
  assert.equal(followerStatus['pushConnected'], false);
  assert.match(await leader.metrics(), /relay_agent_leader\{cluster="east"\} 1/);
  assert.match(await follower.metrics(), /relay_agent_leader\{cluster="east"\} 0/);
  assert.equal(registrations(replicas), 1, 'only the leader registered');
  assert.equal(new Set(relay.stored.map((p) => p.epoch)).size, 1, 'one epoch: one replica pushed');
  assert.equal(
    (await fetch(`http://127.0.0.1:${follower.agent.healthPort}/readyz`)).status,
    200,
    'a follower is ready: it serves the access-log sink',
  );
});

test('given a leader that applied an output, when it stops, then the follower takes over with the persisted certificate, a new epoch and no re-apply', async (t) => {
  const relay = await startRelay(t);
  const { configs } = await replicaConfigs(t, relay);
  const replicas = [await startReplica(t, configs[0] as AgentConfig), await startReplica(t, configs[1] as AgentConfig)];
  const { leader, follower } = await leaderOf(replicas);
  await waitFor(() => relay.stored.length > 0 && settled(relay), { message: 'the leader did not settle' });
  // The translation's own output, not one published by hand: the new leader's input (a new epoch,
  // the same content) translates to the same output again, so nothing new is sent after the
  // takeover and what the new leader announces is what the old one applied.
  await waitFor(
    () => {
      const current = relay.server.outputs.current('east');
      return current !== undefined && relay.server.connections.applied('east') === current.hash;
    },
    { message: 'the leader did not apply the output' },
  );
  const output = relay.server.outputs.current('east') as { hash: string };
  const firstEpoch = relay.stored[0]?.epoch;

  const stoppedAt = Date.now();
  await leader.agent.stop();
  await waitFor(() => follower.agent.status().leadership.leader, {
    timeoutMs: LEASE.leaseDurationMs,
    intervalMs: 10,
    message: 'the follower did not take over before the lease would expire',
  });
  await waitFor(() => relay.stored.some((p) => p.epoch !== firstEpoch), { message: 'the new leader did not push' });
  assert.ok(Date.now() - stoppedAt < 5_000);

  const takeover = relay.stored.find((p) => p.epoch !== firstEpoch);
  assert.equal(takeover?.generation, 1, 'a new epoch starts at generation 1');
  assert.equal(registrations(replicas), 1, 'the new leader reused the persisted client certificate');
  await waitFor(() => follower.agent.status().relay.pullConnected, { message: 'the new leader did not pull' });
  assert.equal(
    relay.server.connections.applied('east'),
    output.hash,
    'the new leader announced the output the old one applied',
  );
  assert.equal(applied(follower), 0, 'the output was not applied again');
  const lease = JSON.parse(await readFile(configs[0]?.leaseFile as string, 'utf8')) as {
    holder: string;
    transitions: number;
  };
  assert.equal(lease.holder, follower.id);
  assert.equal(lease.transitions, 1);
});

test('given a leader, when its lease passes to someone else, then it stops relaying at once', async (t) => {
  const relay = await startRelay(t);
  const { configs } = await replicaConfigs(t, relay);
  const replica = await startReplica(t, configs[0] as AgentConfig);
  await waitFor(() => replica.agent.status().relay.pushConnected, { message: 'the leader did not connect' });
  // The intruder takes the lease the way a replica does: under the lease file's lock. A plain write
  // could land inside the leader's renew round and be overwritten by its renewal.
  const leases = new FileLeaseStore({
    path: configs[0]?.leaseFile as string,
    staleLockMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
  const now = Date.now();
  const intruder = {
    holder: 'intruder',
    acquireTimeMs: now,
    renewTimeMs: now,
    leaseDurationMs: 60_000,
    transitions: 5,
  };
  await waitFor(async () => (await leases.update(() => intruder)).outcome === 'written', {
    message: 'the intruder never got the lease lock',
  });
  // Well inside the intruder's 60 s lease: the replica stops on reading it, not when it would expire
  // (the bound leaves room for the server to see the streams end on a loaded machine).
  await waitFor(
    () =>
      !replica.agent.status().leadership.leader &&
      !replica.agent.status().relay.pushConnected &&
      relay.server.connections.streams('east').length === 0,
    {
      timeoutMs: 10_000,
      message: 'the former leader kept relaying',
    },
  );
  const status = await replica.status();
  assert.equal(status['leaderHolder'], 'intruder');
  assert.match(await replica.metrics(), /relay_agent_leader\{cluster="east"\} 0/);
});

test('given --leader-election kubernetes, when the replica starts, then it holds the coordination.k8s.io Lease named after the cluster and relays', async (t) => {
  const relay = await startRelay(t);
  const fake = await startFakeKubeApiServer();
  t.after(() => fake.stop());
  const { configs, root } = await replicaConfigs(t, relay);
  const kubeconfig = path.join(root, 'kubeconfig');
  await writeFile(kubeconfig, fake.kubeConfigYaml());
  const config: AgentConfig = {
    ...(configs[0] as AgentConfig),
    leaderElection: 'kubernetes',
    kubeconfig,
    leaseDurationMs: 2_000,
    renewDeadlineMs: 1_200,
    retryPeriodMs: 150,
  };
  const replica = await startReplica(t, config);
  await waitFor(() => replica.agent.status().relay.pushConnected && relay.stored.length > 0, {
    message: 'the leader did not relay',
  });
  const lease = fake.get('leases.coordination.k8s.io', 'meshrelay-agent-east', 'gloo-mesh') as unknown as
    { spec: { holderIdentity: string; leaseDurationSeconds: number } } | undefined;
  assert.equal(lease?.spec.holderIdentity, 'east-0');
  assert.equal(lease?.spec.leaseDurationSeconds, 2);
  assert.equal((await replica.status())['leader'], true);
  await replica.agent.stop();
  const released = fake.get('leases.coordination.k8s.io', 'meshrelay-agent-east', 'gloo-mesh') as unknown as {
    spec: { holderIdentity: string };
  };
  assert.equal(released.spec.holderIdentity, '', 'a stopping leader releases the Lease');
});
