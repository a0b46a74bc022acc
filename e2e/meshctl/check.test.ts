import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { startFakeKubeApiServer, startRedisServer, waitFor } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPull,
  openPush,
  pushSnapshot,
  register,
  service,
} from '../../packages/mgmt-server/test/harness.ts';
import type { CheckReport } from '@meshrelay/meshctl';
import {
  UNUSED_TOKEN_ENV,
  apiGet,
  closedPortUrl,
  meshctlAt,
  startServer,
  tokenFrom,
  type RunningServer,
} from './harness.ts';

/**
 * Registers `cluster` through meshctl, then does over real mTLS what its agent
 * does: pushes one snapshot (acked), and pulls its first output.
 */
async function connectWarmCluster(t: TestContext, running: RunningServer, cluster: string): Promise<void> {
  const registered = await meshctlAt(running.url, ['cluster', 'register', cluster]);
  assert.equal(registered.code, 0, registered.stderr);
  const identity = await register(running.server, cluster, tokenFrom(registered.stdout));
  const client = mtlsClient(t, running.server, identity);
  const push = openPush(client);
  t.after(() => push.end());
  pushSnapshot(push, cluster, 1, [service('web')]);
  const ack = await next(push, (m) => m.ack ?? undefined);
  assert.equal(ack.accepted, true, ack.message ?? '');
  const pull = openPull(client);
  t.after(() => pull.end());
  pull.write({ hello: { heldHash: '' } });
  await next(pull, (m) => m.header ?? undefined);
}

/** Waits until the gate has run and let translation go (a fresh replica starts held until its first run). */
async function waitForGateOpen(running: RunningServer): Promise<void> {
  await waitFor(async () => (await apiGet<{ active: boolean }>(running, '/api/v1/safe-mode')).active === false, {
    message: 'the safe-mode gate to open',
  });
}

async function checkJson(
  url: string,
  env: Record<string, string> = {},
): Promise<{ code: number; report: CheckReport }> {
  const result = await meshctlAt(url, ['check', '-o', 'json'], env);
  assert.equal(result.stderr, '');
  return { code: result.code, report: JSON.parse(result.stdout) as CheckReport };
}

test('given a connected warm cluster, when checked, then every check passes and meshctl exits 0', async (t) => {
  const running = await startServer(t);
  await connectWarmCluster(t, running, 'east');
  await waitForGateOpen(running);

  const result = await meshctlAt(running.url, ['check']);

  assert.equal(result.code, 0, result.stdout);
  assert.equal(result.stderr, '');
  const lines = result.stdout.trimEnd().split('\n');
  const summary = lines.pop();
  assert.equal(summary, `All ${lines.length} checks passed (1 with a warning).`);
  // Without --workspaces-file the implicit global workspace is named: a warning, not a failure.
  assert.ok(
    lines.every((l) => l.startsWith('[ok]   ') || l.startsWith('[warn] workspaces: ')),
    result.stdout,
  );
  assert.match(
    result.stdout,
    /^\[warn\] workspaces: implicit global workspace: no Workspace is defined \(--workspaces-file unset\): .*any cluster can define routes for any host, including other clusters' \*\.cluster\.local Services, and AccessPolicies every cluster applies/m,
  );
  assert.match(
    result.stdout,
    /^\[ok\] {3}cluster east connected: streams open on replica meshctl-test: 1 push, 1 pull$/m,
  );
  assert.match(result.stdout, /^\[ok\] {3}cluster east warm: ClusterWarm=True \(FirstSnapshotReceived\) since \S+$/m);
  assert.match(result.stdout, /^\[ok\] {3}store: memory only \(no Redis: inputs are not shared between replicas\)$/m);
});

test('given a registered cluster that never connected, when checked, then its connection and warmth fail and meshctl exits 1', async (t) => {
  const running = await startServer(t);
  const { url } = running;
  await meshctlAt(url, ['cluster', 'register', 'east']);
  await waitForGateOpen(running);

  const result = await meshctlAt(url, ['check']);

  assert.equal(result.code, 1);
  assert.equal(result.stderr, '', 'a failed check is an answer, not an error');
  assert.match(
    result.stdout,
    /^\[FAIL\] cluster east connected: no agent stream is open on replica meshctl-test, and none was since it started$/m,
  );
  assert.match(
    result.stdout,
    /^\[FAIL\] cluster east warm: ClusterWarm=False \(ClusterRegistered\): no input snapshot has been received from it yet$/m,
  );
  assert.match(result.stdout, /^\[ok\] {3}server reachable: /m);
  assert.match(result.stdout, /\n2 of \d+ checks failed\.\n$/);
});

test('given a never-connected cluster, when checked with -o json, then the answer is {ok, checks: [{name, ok, detail}]}', async (t) => {
  const running = await startServer(t);
  const { url } = running;
  await meshctlAt(url, ['cluster', 'register', 'east']);
  await waitForGateOpen(running);

  const { code, report } = await checkJson(url);

  assert.equal(code, 1);
  assert.equal(report.ok, false);
  assert.deepEqual(Object.keys(report).sort(), ['checks', 'ok']);
  for (const c of report.checks) {
    assert.deepEqual(
      Object.keys(c).sort(),
      c.name === 'workspaces' ? ['detail', 'name', 'ok', 'warn'] : ['detail', 'name', 'ok'],
    );
    assert.equal(typeof c.detail, 'string');
  }
  const verdicts = Object.fromEntries(report.checks.map((c) => [c.name, c.ok]));
  assert.deepEqual(verdicts, {
    'server reachable': true,
    'server ready': true,
    store: true,
    workspaces: true,
    'cluster east connected': false,
    'cluster east warm': false,
    'safe mode': true,
    'held outputs': true,
    resources: true,
  });
});

test('given a --workspaces-file, when checked, then the workspaces line names them and is not a warning', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'meshctl-workspaces-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'workspaces.yaml');
  const workspace = (name: string): string =>
    `apiVersion: admin.gloo.solo.io/v2\nkind: Workspace\nmetadata: { name: ${name}, namespace: gloo-mesh }\nspec:\n  workloadClusters: [{ name: east }]\n`;
  await writeFile(file, `${workspace('team-b')}---\n${workspace('team-a')}`);
  const running = await startServer(t, ['--workspaces-file', file]);

  const { report } = await checkJson(running.url);

  assert.deepEqual(
    report.checks.find((c) => c.name === 'workspaces'),
    { name: 'workspaces', ok: true, detail: '2 defined (team-a, team-b)' },
  );
  const status = await apiGet<{ workspaces: unknown }>(running, '/api/v1/status');
  assert.deepEqual(status.workspaces, {
    mode: 'defined',
    source: 'file',
    names: ['team-a', 'team-b'],
    notice: null,
    problems: [],
  });
});

test('given Workspace CRs with the kubernetes registry, one of them invalid, when checked, then the workspaces line names the valid ones and warns naming the invalid one', async (t) => {
  const kube = await startFakeKubeApiServer();
  t.after(() => kube.stop());
  const workspace = (name: string, spec: unknown) => ({
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'Workspace',
    metadata: { name, namespace: 'gloo-mesh' },
    spec,
  });
  kube.put(workspace('web', { workloadClusters: [{ name: 'east' }] }));
  kube.put(workspace('team', { workloadClusters: 'east' }));
  const dir = await mkdtemp(join(tmpdir(), 'meshctl-kube-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'kubeconfig'), kube.kubeConfigYaml(), { mode: 0o600 });
  const running = await startServer(t, ['--registry', 'kubernetes', '--kubeconfig', join(dir, 'kubeconfig')]);

  const { code, report } = await checkJson(running.url);

  const check = report.checks.find((c) => c.name === 'workspaces');
  assert.equal(check?.warn, true);
  assert.match(
    check?.detail ?? '',
    /^1 defined \(web\); 1 invalid: Workspace gloo-mesh\/team: spec\.workloadClusters: .*; not in force \(it never was valid\)$/,
  );
  assert.equal(code, 0, 'a warning, not a failure');
});

test('given no --workspaces-file, when the status is read, then the API names the implicit global workspace and what it allows', async (t) => {
  const running = await startServer(t);
  const status = await apiGet<{ workspaces: { mode: string; names: string[]; notice: string } }>(
    running,
    '/api/v1/status',
  );
  assert.equal(status.workspaces.mode, 'implicit-global');
  assert.deepEqual(status.workspaces.names, []);
  assert.match(
    status.workspaces.notice,
    /one implicit global workspace, so any cluster can define routes for any host/,
  );
});

test('given a disconnected cluster with skip-warming, when checked, then its connection fails with a note that translation does not wait', async (t) => {
  const { url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'edge', '--skip-warming']);

  const { code, report } = await checkJson(url);

  assert.equal(code, 1);
  const connected = report.checks.find((c) => c.name === 'cluster edge connected');
  assert.equal(connected?.ok, false);
  assert.match(connected.detail, /skip-warming is set, so translation does not wait for it$/);
});

test('given nothing listening, when checked, then the one failed check says the server cannot be reached and meshctl exits 1', async () => {
  const url = await closedPortUrl();

  const { code, report } = await checkJson(url, UNUSED_TOKEN_ENV);

  assert.equal(code, 1);
  assert.equal(report.ok, false);
  assert.equal(report.checks.length, 1);
  assert.equal(report.checks[0]?.name, 'server reachable');
  assert.match(
    report.checks[0]?.detail ?? '',
    new RegExp(`^cannot reach the management server at ${url}: .*ECONNREFUSED`),
  );
});

test('given a held output, when checked, then it fails with the held message and the release command', async (t) => {
  const running = await startServer(t);
  await meshctlAt(running.url, ['cluster', 'register', 'east']);
  running.server.held.hold(
    {
      cluster: 'east',
      hash: 'f'.repeat(64),
      reason: 'delete-share',
      message: 'would delete 3 of 4 resources',
      deleted: 3,
      held: 4,
      missingClusters: [],
    },
    new Date(),
  );

  const result = await meshctlAt(running.url, ['check']);

  assert.equal(result.code, 1);
  assert.match(
    result.stdout,
    /^\[FAIL\] output of east: held since \S+ \(\d+s\): would delete 3 of 4 resources \(hash ffffffffffff\); release it with: meshctl output release east$/m,
  );
});

test('given Redis configured and then down, when checked, then the store check fails', async (t) => {
  const redis = await startRedisServer();
  t.after(() => redis.stop());
  const { server, url } = await startServer(t, ['--redis-url', redis.url]);
  await waitFor(() => server.store.health().redisUp, { message: 'Redis to be up' });
  await redis.stop();
  await waitFor(() => !server.store.health().redisUp, { message: 'the server to see Redis down' });

  const { code, report } = await checkJson(url);

  assert.equal(code, 1);
  const store = report.checks.find((c) => c.name === 'store');
  assert.equal(store?.ok, false);
  assert.match(store.detail, /^Redis is configured but down: this replica translates from memory/);
});

test('given a relay token presented with a second key, when checked, then a failed check names the reuse and the commands that end it', async (t) => {
  const running = await startServer(t);
  await connectWarmCluster(t, running, 'east');
  await waitForGateOpen(running);
  const token = (await meshctlAt(running.url, ['cluster', 'rotate-token', 'east'])).stdout;
  await register(running.server, 'east', tokenFrom(token));
  await assert.rejects(register(running.server, 'east', tokenFrom(token)), (e: { details: string }) =>
    /MESHRELAY_ERR_TOKEN_REUSED/.test(e.details),
  );

  const result = await meshctlAt(running.url, ['check']);

  assert.equal(result.code, 1);
  assert.match(
    result.stdout,
    /^\[FAIL\] cluster east relay token: presented with a second key since \S+: .*meshctl cluster rotate-token east.*meshctl cluster revoke east\)$/m,
  );
  assert.match(result.stdout, /\n1 of \d+ checks failed\.\n$/);
});
