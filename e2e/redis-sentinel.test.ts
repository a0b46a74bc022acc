// Redis as operators run it (DESIGN §5, §7): the servers reach Redis through Sentinel and follow a
// failover; and they reach a TLS-only Redis with a client certificate and a password from a file.
// Real redis-server, redis-server --sentinel, meshrelay-server and meshrelay-agent processes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { hasResource, Mesh, virtualDestinationYaml, type ServerProc } from './mesh.ts';
import { assertProvenance, clusterView } from './faults/support.ts';
import { SENTINEL_MASTER, startSentinelTopology, startTlsRedis } from './redis-topology.ts';

const CLUSTERS = ['cluster-a', 'cluster-b'] as const;

async function redisUp(mesh: Mesh, server: ServerProc): Promise<boolean> {
  return /^meshrelay_redis_up(?:\{[^}]*\})? 1$/m.test(await mesh.metrics(server));
}

async function waitForRedisUp(mesh: Mesh, servers: readonly ServerProc[], message: string): Promise<void> {
  for (const server of servers) {
    await waitFor(() => redisUp(mesh, server), {
      timeoutMs: 30_000,
      intervalMs: 200,
      message: `${server.name}: ${message}`,
    });
  }
}

/**
 * Every agent's applied output holds each written VirtualDestination and was built from the inputs the server holds.
 */
async function waitForConvergence(mesh: Mesh, server: ServerProc, destinations: readonly string[]): Promise<void> {
  for (const c of CLUSTERS) {
    await mesh.waitForOutput(
      c,
      (o) => destinations.every((d) => hasResource(o, 'ServiceEntry', d)),
      60_000,
      `${c}'s output with ${destinations.join(', ')}`,
    );
  }
  await waitFor(
    async () => {
      for (const c of CLUSTERS) await assertProvenance(mesh, mesh.readOutput(c), CLUSTERS, server);
      return true;
    },
    { timeoutMs: 30_000, intervalMs: 200, message: 'outputs were not built from the inputs the server holds' },
  );
}

test(
  'given servers that reach Redis through Sentinel, when the primary is killed while agents push and pull, then the servers follow the promoted replica, no input is lost and every agent converges',
  { timeout: 240_000 },
  async (t) => {
    const topology = await startSentinelTopology(t);
    const sentinelFlags = ['--redis-sentinels', topology.sentinelList, '--redis-sentinel-master', SENTINEL_MASTER];
    const mesh = await Mesh.start(t, { redis: false, serverFlags: sentinelFlags });
    const s0 = await mesh.startServer('mgmt-0');
    const s1 = await mesh.startServer('mgmt-1');
    await waitForRedisUp(mesh, [s0, s1], 'Redis (through Sentinel) is not up');
    for (const c of CLUSTERS) await mesh.register(c);
    await mesh.startAgent('cluster-a', { from: 'cluster-a', servers: [s0, s1] });
    await mesh.startAgent('cluster-b', { from: 'cluster-b', servers: [s1, s0] });
    for (const c of CLUSTERS)
      await mesh.waitForOutput(c, (o) => o.provenance.length === CLUSTERS.length, 30_000, `first output of ${c}`);

    // Agents keep changing their inputs while the primary dies and Sentinel promotes the replica.
    const written: string[] = [];
    const write = (cluster: string, name: string) => {
      mesh.writeManifest(cluster, `vd-${name}.yaml`, virtualDestinationYaml(name, `${name}.global`));
      written.push(name);
    };
    write('cluster-a', 'before-a');
    write('cluster-b', 'before-b');
    const sentinel = topology.sentinels[0]!;
    const switched = sentinel.waitForLine(
      new RegExp(
        `\\+switch-master ${SENTINEL_MASTER} 127\\.0\\.0\\.1 ${topology.primaryPort} 127\\.0\\.0\\.1 ${topology.replicaPort}`,
      ),
      60_000,
    );
    await topology.primary.kill();
    write('cluster-a', 'during-a');
    write('cluster-b', 'during-b');
    await switched;
    write('cluster-a', 'after-a');

    // The servers reconnect through the sentinels to the promoted replica and converge.
    await waitForRedisUp(mesh, [s0, s1], 'did not reconnect to the promoted replica');
    await waitForConvergence(mesh, s0, written);
    await waitForConvergence(mesh, s1, written);

    // A replica that starts now holds nothing in memory: whatever it reads came from the new primary,
    // which therefore holds every accepted input (written back where the failover lost it).
    const fresh = await mesh.startServer('mgmt-fresh');
    await waitForRedisUp(mesh, [fresh], 'a new replica did not reach the promoted primary');
    for (const c of CLUSTERS) {
      const held = (await clusterView(mesh, c, s0)).input?.hash;
      assert.ok(held, `${c}: s0 holds an input`);
      await waitFor(async () => (await clusterView(mesh, c, fresh)).input?.hash === held, {
        timeoutMs: 20_000,
        intervalMs: 200,
        message: `the promoted primary does not hold ${c}'s latest input`,
      });
    }
  },
);

test(
  'given servers on Sentinel, when an operator fails over while the old primary stays up, then the servers move to the new primary and keep writing there',
  { timeout: 180_000 },
  async (t) => {
    const topology = await startSentinelTopology(t);
    const mesh = await Mesh.start(t, {
      redis: false,
      serverFlags: ['--redis-sentinels', topology.sentinelList, '--redis-sentinel-master', SENTINEL_MASTER],
    });
    const s0 = await mesh.startServer('mgmt-0');
    await waitForRedisUp(mesh, [s0], 'Redis (through Sentinel) is not up');
    for (const c of CLUSTERS) await mesh.register(c);
    for (const c of CLUSTERS) await mesh.startAgent(c, { from: c, servers: [s0] });
    for (const c of CLUSTERS)
      await mesh.waitForOutput(c, (o) => o.provenance.length === CLUSTERS.length, 30_000, `first output of ${c}`);
    const switched = topology.sentinels[0]!.waitForLine(
      new RegExp(`\\+switch-master ${SENTINEL_MASTER} .* 127\\.0\\.0\\.1 ${topology.replicaPort}$`),
      60_000,
    );
    // The sentinels demote the old primary and disconnect its clients; it stays up, read-only.
    const sentinelPort = topology.sentinelList.split(',')[0]!.split(':')[1]!;
    execFileSync('redis-cli', ['-p', sentinelPort, 'SENTINEL', 'FAILOVER', SENTINEL_MASTER]);
    await switched;
    assert.ok(topology.primary.running, 'the old primary is still up');
    mesh.writeManifest(
      'cluster-a',
      'vd-after-switch.yaml',
      virtualDestinationYaml('after-switch', 'after-switch.global'),
    );
    await waitForRedisUp(mesh, [s0], 'did not reconnect to the new primary');
    await waitForConvergence(mesh, s0, ['after-switch']);
    const fresh = await mesh.startServer('mgmt-fresh');
    const held = (await clusterView(mesh, 'cluster-a', s0)).input?.hash;
    assert.ok(held);
    await waitFor(async () => (await clusterView(mesh, 'cluster-a', fresh)).input?.hash === held, {
      timeoutMs: 20_000,
      intervalMs: 200,
      message: "the new primary does not hold cluster-a's input written after the switch",
    });
  },
);

test(
  'given a TLS-only Redis that asks for a client certificate and a password, when a server is given the CA, the client pair and a password file, then it stores inputs a second server reads back',
  { timeout: 180_000 },
  async (t) => {
    const redis = await startTlsRedis(t);
    const mesh = await Mesh.start(t, {
      redis: false,
      serverFlags: [
        '--redis-url',
        `redis://localhost:${redis.port}`,
        '--redis-tls',
        '--redis-tls-ca-file',
        redis.caFile,
        '--redis-tls-cert-file',
        redis.clientCertFile,
        '--redis-tls-key-file',
        redis.clientKeyFile,
        '--redis-password-file',
        redis.passwordFile,
      ],
    });
    const s0 = await mesh.startServer('mgmt-0');
    await waitForRedisUp(mesh, [s0], 'Redis over TLS is not up');
    await mesh.register('cluster-a');
    await mesh.startAgent('cluster-a', { from: 'cluster-a', servers: [s0] });
    await mesh.waitForOutput('cluster-a', (o) => o.provenance.length === 1, 30_000, 'first output of cluster-a');
    const held = (await clusterView(mesh, 'cluster-a', s0)).input?.hash;
    assert.ok(held);
    const s1 = await mesh.startServer('mgmt-1');
    await waitFor(async () => (await clusterView(mesh, 'cluster-a', s1)).input?.hash === held, {
      timeoutMs: 20_000,
      intervalMs: 200,
      message: "the second server did not read cluster-a's input from Redis over TLS",
    });
  },
);

test(
  'given a Redis password file that cannot be read, when the server starts, then it stops with an error naming the flag',
  { timeout: 60_000 },
  async (t) => {
    const mesh = await Mesh.start(t, {
      redis: false,
      serverFlags: ['--redis-url', 'redis://127.0.0.1:1', '--redis-password-file', '/nonexistent/redis-password'],
    });
    // The process exits before it announces a start; the rejection quotes its last lines.
    await assert.rejects(
      mesh.startServer('mgmt-0'),
      /--redis-password-file: cannot read \/nonexistent\/redis-password/,
    );
    assert.equal(mesh.servers.length, 0, 'no server started');
  },
);
