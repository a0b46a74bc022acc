import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { spawnProcess, waitFor } from '@meshrelay/testkit';
import { serviceYaml, tempDir } from './support/fixtures.ts';
import { settled, startRelay } from './support/relay-harness.ts';

const LAUNCHER = fileURLToPath(new URL('../bin/meshrelay-agent.js', import.meta.url));

async function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const handle = await spawnProcess({
    command: process.execPath,
    args: [LAUNCHER, ...args],
    env,
    name: 'meshrelay-agent',
  });
  return handle;
}

test('given --help, when the bin runs, then it lists the options with their defaults and exits 0', async () => {
  const handle = await run(['--help']);
  const exit = await handle.exited;
  assert.equal(exit.code, 0);
  const text = handle.lines.join(' ');
  assert.match(text, /--server-address/);
  assert.match(text, /MESHRELAY_AGENT_HEARTBEAT_TIMEOUT/);
});

test('given a bad server address, when the bin runs, then it prints one line naming the field and exits 2', async () => {
  const handle = await run([
    '--cluster',
    'east',
    '--manifests-dir',
    '/m',
    '--output-dir',
    '/o',
    '--state-dir',
    '/s',
    '--server-address',
    'x',
  ]);
  const exit = await handle.exited;
  assert.equal(exit.code, 2);
  assert.equal(handle.lines.length, 1, handle.lines.join('\n'));
  assert.match(handle.lines[0] ?? '', /--server-address: "x" is not host:port/);
});

test('given an unknown flag, when the bin runs, then it exits 2 with one line', async () => {
  const handle = await run(['--clutser', 'east']);
  const exit = await handle.exited;
  assert.equal(exit.code, 2);
  assert.match(handle.lines.join('\n'), /unknown option '--clutser'/);
});

test('given a relay server, when the bin runs from environment variables, then it logs "snapshot acked" and "output applied" and exits 0 on SIGTERM', async (t) => {
  const relay = await startRelay(t);
  const root = await tempDir(t);
  await mkdir(path.join(root, 'manifests'));
  await writeFile(path.join(root, 'manifests', 'reviews.yaml'), serviceYaml('reviews'));
  await writeFile(path.join(root, 'ca.pem'), relay.caPem);
  const handle = await run([], {
    MESHRELAY_AGENT_CLUSTER: 'east',
    MESHRELAY_AGENT_SERVER_ADDRESS: relay.address,
    MESHRELAY_AGENT_TOKEN: relay.token,
    MESHRELAY_AGENT_ROOT_CA_FILE: path.join(root, 'ca.pem'),
    MESHRELAY_AGENT_MANIFESTS_DIR: path.join(root, 'manifests'),
    MESHRELAY_AGENT_OUTPUT_DIR: path.join(root, 'output'),
    MESHRELAY_AGENT_STATE_DIR: path.join(root, 'state'),
    MESHRELAY_AGENT_HEALTH_PORT: '0',
    MESHRELAY_AGENT_HEARTBEAT_INTERVAL: '200ms',
    MESHRELAY_AGENT_HEARTBEAT_TIMEOUT: '1s',
  });
  t.after(() => handle.kill());
  const acked = JSON.parse(await handle.waitForLine(/snapshot acked/, 15_000)) as Record<string, unknown>;
  assert.equal(acked['cluster'], 'east');
  assert.equal(acked['generation'], 1);
  assert.match(String(acked['hash']), /^[0-9a-f]{64}$/);
  const applied = JSON.parse(await handle.waitForLine(/output applied/, 15_000)) as Record<string, unknown>;
  assert.match(String(applied['hash']), /^[0-9a-f]{64}$/);
  await waitFor(() => settled(relay), {
    timeoutMs: 10_000,
    message: 'the server did not record the agent applying its output',
  });
  const exit = await handle.stop();
  assert.equal(exit.code, 0);
});
