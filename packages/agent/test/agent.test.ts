import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { Agent } from '../src/agent.ts';
import type { AgentConfig } from '../src/config.ts';
import { captureLogger, serviceYaml, tempDir } from './support/fixtures.ts';
import { logged, settled, startRelay, type RelayUnderTest } from './support/relay-harness.ts';

const VIRTUAL_SERVICE: Resource = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name: 'reviews', namespace: 'bookinfo' },
  spec: { hosts: ['reviews.global'] },
};

async function agentConfig(t: TestContext, relay: RelayUnderTest): Promise<AgentConfig & { manifestsDir: string }> {
  const serverAddresses = [relay.address];
  const root = await tempDir(t);
  const manifestsDir = path.join(root, 'manifests');
  await mkdir(manifestsDir);
  await writeFile(path.join(manifestsDir, 'reviews.yaml'), serviceYaml('reviews'));
  await writeFile(path.join(root, 'ca.pem'), relay.caPem);
  await writeFile(path.join(root, 'token'), `${relay.token}\n`);
  return {
    cluster: 'east',
    serverAddresses,
    tokenFile: path.join(root, 'token'),
    rootCaFile: path.join(root, 'ca.pem'),
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
    leaderElection: 'none',
    leaseName: 'meshrelay-agent-east',
    leaseNamespace: 'gloo-mesh',
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    replicaId: 'east-0',
  };
}

async function startAgent(t: TestContext, config: AgentConfig) {
  const { logger, lines } = captureLogger();
  const agent = new Agent(config, logger, {
    backoff: { baseMs: 20, capMs: 200 },
    defaultMetrics: false,
    healthHost: '127.0.0.1',
  });
  await agent.start();
  t.after(() => agent.stop());
  const get = async (route: string) => {
    const res = await fetch(`http://127.0.0.1:${agent.healthPort}${route}`);
    return { status: res.status, body: await res.text() };
  };
  return { agent, lines, get };
}

test('given a server that has not acked yet, when probed, then /healthz is 200 and /readyz 503 until the ack arrives', async (t) => {
  const relay = await startRelay(t);
  relay.proxy.setDown(true);
  const { get, lines } = await startAgent(t, await agentConfig(t, relay));
  assert.equal((await get('/healthz')).status, 200);
  await waitFor(() => logged(lines, /^registration failed/), { timeoutMs: 10_000 });
  assert.equal((await get('/readyz')).status, 503);
  relay.proxy.setDown(false);
  await waitFor(async () => (await get('/readyz')).status === 200, { timeoutMs: 10_000 });
  assert.equal(relay.stored.length, 1);
});

test('given a running agent, when an output arrives and a manifest changes, then the output is written and the change is pushed', async (t) => {
  const relay = await startRelay(t);
  const config = await agentConfig(t, relay);
  const { agent, lines, get } = await startAgent(t, config);
  await waitFor(() => relay.stored.length === 1 && settled(relay), { timeoutMs: 10_000 });
  const output = relay.publish([VIRTUAL_SERVICE], [{ cluster: 'east', inputHash: relay.stored[0]?.hash ?? '' }]);
  await waitFor(() => relay.server.connections.applied('east') === output.hash, { timeoutMs: 10_000 });
  assert.ok(logged(lines, /^output applied$/));
  assert.ok(logged(lines, /^snapshot acked$/));
  assert.deepEqual((await readdir(agent.outputCurrentPath)).sort(), [
    'VirtualService.bookinfo.reviews.yaml',
    'snapshot.json',
  ]);
  const status = JSON.parse((await get('/status')).body) as Record<string, unknown>;
  assert.equal(status['cluster'], 'east');
  assert.equal(status['serverAddress'], relay.address);
  assert.equal(status['pushConnected'], true);
  assert.equal(status['heldOutputHash'], output.hash);
  assert.deepEqual(status['problems'], []);

  await writeFile(path.join(config.manifestsDir, 'ratings.yaml'), serviceYaml('ratings'));
  await waitFor(() => relay.stored.length === 2, { timeoutMs: 5000 });
  assert.equal(relay.stored[1]?.generation, 2);
  assert.equal(relay.stored[1]?.resources.length, 2);
  const metrics = (await get('/metrics')).body;
  assert.match(metrics, /relay_agent_push_connected\{cluster="east"\} 1/);
  assert.match(metrics, /relay_agent_snapshots_pushed_total\{cluster="east"\} 2/);
  assert.match(metrics, /relay_agent_outputs_applied_total\{cluster="east"\} [1-9]/);
  assert.match(metrics, /relay_agent_input_problems\{cluster="east"\} 0/);
  assert.match(metrics, /relay_agent_snapshots_rejected_total\{cluster="east"\} 0/);
});

test('given a snapshot the server refuses, when it is NACKed, then the agent counts it in relay_agent_snapshots_rejected_total and keeps running', async (t) => {
  const relay = await startRelay(t, { flags: ['--max-resources', '1'] });
  const config = await agentConfig(t, relay);
  const { lines, get } = await startAgent(t, config);
  await waitFor(() => relay.stored.length === 1, { timeoutMs: 10_000 });
  await writeFile(path.join(config.manifestsDir, 'ratings.yaml'), serviceYaml('ratings'));
  await waitFor(
    async () => /relay_agent_snapshots_rejected_total\{cluster="east"\} 1/.test((await get('/metrics')).body),
    { timeoutMs: 10_000 },
  );
  assert.ok(logged(lines, /^snapshot rejected by the server: MESHRELAY_ERR_SNAPSHOT_TOO_LARGE/));
  assert.equal(relay.stored.length, 1, 'the server kept the previous snapshot');
  assert.equal((await get('/readyz')).status, 200, 'the stream stays up and the agent stays ready');
});

test('given an invalid manifest, when the agent runs, then /status and /metrics report the problem with file and field', async (t) => {
  const relay = await startRelay(t);
  const config = await agentConfig(t, relay);
  await writeFile(path.join(config.manifestsDir, 'bad.yaml'), serviceYaml('bad', 70000));
  const { get } = await startAgent(t, config);
  await waitFor(() => relay.stored.length === 1, { timeoutMs: 10_000 });
  assert.equal(relay.stored[0]?.resources.length, 1, 'the valid neighbour still goes up');
  const status = JSON.parse((await get('/status')).body) as { problems: unknown[] };
  assert.deepEqual(status.problems, [
    { file: 'bad.yaml', document: 0, path: 'spec.ports[0].port', message: 'must be <= 65535' },
  ]);
  assert.match((await get('/metrics')).body, /relay_agent_input_problems\{cluster="east"\} 1/);
});

test('given an agent that applied an output, when it restarts while every server is down, then it keeps serving that output', async (t) => {
  const relay = await startRelay(t);
  const config = await agentConfig(t, relay);
  const first = await startAgent(t, config);
  // The output translation built and the agent applied. The restarted agent pushes under a new
  // epoch, which translates again (provenance names the epoch) to an output of the same hash.
  await waitFor(() => relay.stored.length === 1 && settled(relay), { timeoutMs: 10_000 });
  const output = relay.server.outputs.current('east');
  assert.ok(output);
  await first.agent.stop();
  relay.proxy.setDown(true);

  const { agent, lines, get } = await startAgent(t, config);
  assert.ok(logged(lines, /^restored last applied output$/));
  const snapshot = JSON.parse(await readFile(path.join(agent.outputCurrentPath, 'snapshot.json'), 'utf8')) as {
    hash: string;
  };
  assert.equal(snapshot.hash, output.hash);
  await waitFor(() => logged(lines, /^relay connection ended/), { timeoutMs: 10_000 });
  const status = JSON.parse((await get('/status')).body) as Record<string, unknown>;
  assert.equal(status['heldOutputHash'], output.hash);
  assert.equal(status['pushConnected'], false);
  assert.equal((await get('/readyz')).status, 503);
});

test('given a restarted agent holding the current output, when it reconnects, then its hello names the held hash and nothing is resent', async (t) => {
  const relay = await startRelay(t);
  const config = await agentConfig(t, relay);
  const first = await startAgent(t, config);
  // The output translation built and the agent applied. The restarted agent pushes under a new
  // epoch, which translates again (provenance names the epoch) to an output of the same hash.
  await waitFor(() => relay.stored.length === 1 && settled(relay), { timeoutMs: 10_000 });
  const output = relay.server.outputs.current('east');
  assert.ok(output);
  await first.agent.stop();
  const pushes = await metricValue(relay, 'relay_output_pushes_total');
  const second = await startAgent(t, config);
  await waitFor(
    () =>
      second.agent.status().relay.pullConnected &&
      relay.server.connections.streams('east').some((s) => s.kind === 'pull'),
    { timeoutMs: 10_000 },
  );
  await waitFor(() => logged(second.lines, /^snapshot acked$/), { timeoutMs: 10_000 });
  assert.equal(relay.server.connections.applied('east'), output.hash, 'the hello named the held output');
  assert.equal(await metricValue(relay, 'relay_output_pushes_total'), pushes, 'nothing was sent again');
  assert.ok(!logged(second.lines, /^output applied$/));
});

async function metricValue(relay: RelayUnderTest, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${relay.server.metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes('cluster="east"'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}
