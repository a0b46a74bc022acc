import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { startRestartedTestServer } from '../../packages/mgmt-server/test/harness.ts';
import { fillWaysOut, renderSafeMode, type CheckReport, type SafeModeStatus } from '@meshrelay/meshctl';
import { meshctlAt, rememberServer, startServer } from './harness.ts';

interface Target {
  readonly url: string;
  readonly token: string;
}

/** The replica's safe-mode answer, read with its admin token. */
async function safeModeOf(target: Target): Promise<SafeModeStatus> {
  const res = await fetch(`${target.url}/api/v1/safe-mode`, { headers: { authorization: `Bearer ${target.token}` } });
  return (await res.json()) as SafeModeStatus;
}

/**
 * A replica restarting onto a registry where `east` is warm, with no input in
 * memory: the gate holds it. (Registering into a running replica would race its
 * first translation run, after which the gate never closes again.)
 */
async function heldReplica(t: TestContext, flags: string[]): Promise<Target> {
  const { server } = await startRestartedTestServer(t, [{ name: 'east', warm: true }], flags);
  rememberServer(t, server.api, server, server.stateDir);
  const target = { url: server.api, token: server.admin.token };
  await waitFor(async () => (await safeModeOf(target)).missing.includes('east'), {
    message: 'the gate to hold for east',
  });
  return target;
}

test('given safe mode holding for a warm cluster without input, when its status is shown, then it names the hold, the cluster and the ways out, and exits 0', async (t) => {
  const target = await heldReplica(t, ['--safe-mode', 'true']);
  const { url } = target;

  const result = await meshctlAt(url, ['safe-mode', 'status']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '');
  const lines = result.stdout.split('\n');
  assert.match(lines[0] ?? '', /^Translation is HELD by safe mode since \d{4}-\d\d-\d\dT\S+Z \(for \d+s\)\.$/);
  assert.deepEqual(lines.slice(1), [
    'Missing clusters: east',
    'Safe mode has no timeout: translation resumes once every missing cluster is present or taken out of the warm set.',
    'Ways out:',
    '  - reconnect the agent of each missing cluster',
    '  - deregister a cluster that is gone for good: meshctl cluster deregister east',
    '  - let translation go on without it: meshctl cluster update east --skip-warming',
    '',
  ]);
});

test('given safe mode holding, when its status is shown with -o json, then the raw API answer is printed', async (t) => {
  const target = await heldReplica(t, ['--safe-mode', 'true']);
  const { url } = target;

  const result = await meshctlAt(url, ['safe-mode', 'status', '-o', 'json']);

  assert.equal(result.code, 0, result.stderr);
  const printed = JSON.parse(result.stdout) as SafeModeStatus;
  assert.deepEqual(printed, await safeModeOf(target));
  assert.equal(printed.active, true);
  assert.equal(printed.mode, 'safe-mode');
  assert.deepEqual(printed.missing, ['east']);
});

test('given safe mode holding, when checked, then the safe-mode check fails naming the cluster and the ways out', async (t) => {
  const target = await heldReplica(t, ['--safe-mode', 'true']);
  const { url } = target;

  const result = await meshctlAt(url, ['check', '-o', 'json']);

  assert.equal(result.code, 1);
  const check = (JSON.parse(result.stdout) as CheckReport).checks.find((c) => c.name === 'safe mode');
  assert.equal(check?.ok, false);
  assert.match(check.detail, /^translation is HELD by safe mode since \S+ \(for \d+s\); missing: east; ways out: /);
  assert.ok(check.detail.includes('meshctl cluster update east --skip-warming'), check.detail);
  assert.ok(check.detail.includes('meshctl cluster deregister east'), check.detail);
});

test('given safe mode holding, when the missing cluster is set to skip warming, then the status says translation runs', async (t) => {
  const target = await heldReplica(t, ['--safe-mode', 'true']);
  const { url } = target;

  const update = await meshctlAt(url, ['cluster', 'update', 'east', '--skip-warming']);
  assert.equal(update.code, 0, update.stderr);
  await waitFor(async () => !(await safeModeOf(target)).active, { message: 'the gate to open' });

  const result = await meshctlAt(url, ['safe-mode', 'status']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, 'Translation is running: every required cluster is present (all-required-present).\n');
});

test('given a safe-start window holding, when its status is shown, then it names the window and when it ends', async (t) => {
  const target = await heldReplica(t, ['--safe-start-window', '600']);
  const { url } = target;

  const result = await meshctlAt(url, ['safe-mode', 'status']);

  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    /^Translation is HELD by the safe-start window since \S+ \(for \d+s\)\.\nMissing clusters: east\n/,
  );
  assert.match(
    result.stdout,
    /^Window ends at: \S+Z \(in (9|10)m\); then translation runs without the missing clusters\.$/m,
  );
  assert.match(result.stdout, /^ {2}- let translation go on without it: meshctl cluster update east --skip-warming$/m);
});

test('given a replica with no clusters, when its status is shown, then translation runs', async (t) => {
  const running = await startServer(t);
  const target = { url: running.url, token: running.server.admin.token };
  const { url } = target;
  await waitFor(async () => !(await safeModeOf(target)).active, { message: 'the gate to open' });

  const result = await meshctlAt(url, ['safe-mode', 'status']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, 'Translation is running: every required cluster is present (all-required-present).\n');
});

test('given two missing clusters, when the ways out are filled in, then each command is given once per cluster', () => {
  const ways = fillWaysOut(
    [
      'reconnect the agent of each missing cluster',
      'let translation go on without it: meshctl cluster update NAME --skip-warming',
    ],
    ['east', 'west'],
  );

  assert.deepEqual(ways, [
    { action: 'reconnect the agent of each missing cluster', commands: [] },
    {
      action: 'let translation go on without it',
      commands: ['meshctl cluster update east --skip-warming', 'meshctl cluster update west --skip-warming'],
    },
  ]);
});

test('given a window holding for two clusters, when rendered, then times are relative to now and commands are listed per cluster', () => {
  const status: SafeModeStatus = {
    active: true,
    mode: 'safe-start-window',
    missing: ['east', 'west'],
    since: '2026-11-22T11:59:00.000Z',
    windowEndsAt: '2026-11-22T12:02:00.000Z',
    openReason: null,
    waysOut: ['deregister a cluster that is gone for good: meshctl cluster deregister NAME'],
  };

  const text = renderSafeMode(status, new Date('2026-11-22T12:00:00Z'));

  assert.equal(
    text,
    [
      'Translation is HELD by the safe-start window since 2026-11-22T11:59:00.000Z (for 60s).',
      'Missing clusters: east, west',
      'Window ends at: 2026-11-22T12:02:00.000Z (in 2m); then translation runs without the missing clusters.',
      'Ways out:',
      '  - deregister a cluster that is gone for good:',
      '      meshctl cluster deregister east',
      '      meshctl cluster deregister west',
      '',
    ].join('\n'),
  );
});
