import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test, type TestContext } from 'node:test';
import { spawnProcess, waitFor } from '@meshrelay/testkit';
import { serviceYaml, tempDir } from './support/fixtures.ts';
import { startRelay, type RelayUnderTest } from './support/relay-harness.ts';

const LAUNCHER = fileURLToPath(new URL('../bin/meshrelay-agent.js', import.meta.url));

/**
 * A real agent process for cluster "east" on random ports; resolves with its bound ports once it logged "relay agent
 * started".
 */
async function startAgent(t: TestContext, root: string, relay: RelayUnderTest, extraArgs: string[] = []) {
  await writeFile(path.join(root, 'ca.pem'), relay.caPem);
  const args = [
    LAUNCHER,
    '--cluster',
    'east',
    '--server-address',
    relay.address,
    '--token',
    relay.token,
    '--root-ca-file',
    path.join(root, 'ca.pem'),
  ];
  args.push(
    '--manifests-dir',
    path.join(root, 'manifests'),
    '--output-dir',
    path.join(root, 'output'),
    '--state-dir',
    path.join(root, 'state'),
  );
  args.push(
    '--health-port',
    '0',
    '--access-log-port',
    '0',
    '--heartbeat-interval',
    '200ms',
    '--heartbeat-timeout',
    '1s',
    '--debounce-ms',
    '50',
    ...extraArgs,
  );
  const handle = await spawnProcess({ command: process.execPath, args, name: 'meshrelay-agent' });
  t.after(() => handle.kill());
  const started = JSON.parse(await handle.waitForLine(/relay agent started/, 20_000)) as {
    healthPort: number;
    accessLogPort: number;
  };
  return { handle, ...started };
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

test('given --health-host and --access-log-host, when the agent runs, then each listener binds only where it was told', async (t) => {
  const relay = await startRelay(t);
  const root = await tempDir(t);
  await mkdir(path.join(root, 'manifests'));
  // All of 127.0.0.0/8 is loopback on Linux: bound to 127.0.0.2, a listener is not reachable on 127.0.0.1.
  const agent = await startAgent(t, root, relay, ['--health-host', '127.0.0.2', '--access-log-host', '127.0.0.3']);
  assert.equal((await fetch(`http://127.0.0.2:${agent.healthPort}/healthz`)).status, 200);
  assert.equal(await canConnect('127.0.0.1', agent.healthPort), false, 'health port reachable on another address');
  assert.equal(await canConnect('127.0.0.3', agent.accessLogPort), true);
  assert.equal(
    await canConnect('127.0.0.1', agent.accessLogPort),
    false,
    'access-log sink reachable on another address',
  );
});

test('given a deeply nested manifest and a file holding a secret, when the agent runs, then it keeps pushing and /status names both files without their text', async (t) => {
  const relay = await startRelay(t);
  const root = await tempDir(t);
  await mkdir(path.join(root, 'manifests'));
  await writeFile(path.join(root, 'manifests', 'deep.yaml'), `${'['.repeat(2000)}${']'.repeat(2000)}\n`);
  await writeFile(path.join(root, 'manifests', 'secret.json'), '{"token": "s3cr3t-value" "x": 1}');
  await writeFile(path.join(root, 'manifests', 'reviews.yaml'), serviceYaml('reviews'));
  const agent = await startAgent(t, root, relay);
  await waitFor(() => relay.stored.length >= 1, { timeoutMs: 20_000 });
  assert.equal(relay.stored[0]?.resources.length, 1);
  const status = await (await fetch(`http://127.0.0.1:${agent.healthPort}/status`)).text();
  assert.ok(!status.includes('s3cr3t'), status);
  const problems = (JSON.parse(status) as { problems: Array<{ file: string; message: string }> }).problems;
  assert.deepEqual(
    problems.map((p) => p.file),
    ['deep.yaml', 'secret.json'],
  );
  await writeFile(path.join(root, 'manifests', 'ratings.yaml'), serviceYaml('ratings'));
  await waitFor(() => relay.stored.some((s) => s.resources.length === 2), { timeoutMs: 20_000 });
  assert.equal(agent.handle.running, true);
});
