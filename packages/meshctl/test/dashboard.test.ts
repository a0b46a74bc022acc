import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { runMeshctl } from '../src/index.ts';
import { closedPortUrl, meshctl, tempDir } from './harness.ts';

const BIN = fileURLToPath(new URL('../bin/meshctl.js', import.meta.url));
/** A working directory without a local run's state, so no admin token is found by accident. */
const EMPTY_DIR = mkdtempSync(join(tmpdir(), 'meshctl-dashboard-'));
const NO_TOKEN_LINE = /^The UI asks for the server's admin token; no admin token: pass --admin-token .*\.\n$/;

/** Runs meshctl in-process and records the URLs it asked a browser to open. */
async function dashboard(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; opened: string[] }> {
  let stdout = '';
  const opened: string[] = [];
  const code = await runMeshctl(['dashboard', ...args], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: () => true },
    env,
    cwd: EMPTY_DIR,
    openBrowser: (url) => opened.push(url),
  });
  return { code, stdout, opened };
}

test('given --server, when the dashboard is asked for, then its UI address is printed and opened in a browser', async () => {
  const result = await dashboard(['--server', 'http://mgmt.example:8090/']);

  assert.equal(result.code, 0);
  const [first, ...rest] = result.stdout.split(/(?<=\n)/);
  assert.equal(first, 'Meshrelay UI: http://mgmt.example:8090/\n');
  assert.match(rest.join(''), NO_TOKEN_LINE);
  assert.deepEqual(result.opened, ['http://mgmt.example:8090/']);
});

test('given --no-browser, when the dashboard is asked for, then the address is printed and no browser is opened', async () => {
  const result = await dashboard(['--server', 'http://mgmt.example:8090', '--no-browser', '-o', 'json']);

  assert.equal(result.code, 0);
  assert.deepEqual(JSON.parse(result.stdout), {
    url: 'http://mgmt.example:8090/',
    openBrowser: false,
    adminTokenFrom: null,
  });
  assert.deepEqual(result.opened, []);
});

test('given a server that is down, when the dashboard is asked for, then it still prints the address and exits 0', async () => {
  const url = await closedPortUrl();

  const result = await meshctl(['--server', url, 'dashboard', '--no-browser']);

  assert.equal(result.code, 0, result.stderr);
  assert.ok(result.stdout.startsWith(`Meshrelay UI: ${url}/\n`), result.stdout);
});

test('given an admin token file, when the dashboard is asked for, then it says where the sign-in token is without printing it', async (t) => {
  const file = join(await tempDir(t), 'admin-token');
  await writeFile(file, 'the-admin-token-value-0123456789\n', { mode: 0o600 });

  const result = await dashboard(['--server', 'http://mgmt.example:8090', '--no-browser'], {
    MESHRELAY_ADMIN_TOKEN_FILE: file,
  });

  assert.equal(result.code, 0);
  assert.equal(result.stdout, `Meshrelay UI: http://mgmt.example:8090/\nSign in with the admin token from ${file}.\n`);
  assert.equal(result.stdout.includes('the-admin-token-value'), false);
});

test('given the installed launcher and a desktop opener on PATH, when the dashboard is asked for, then the opener receives the address', async (t) => {
  const dir = await tempDir(t);
  const openedFile = join(dir, 'opened');
  for (const opener of ['xdg-open', 'open']) {
    const script = join(dir, opener);
    await writeFile(script, `#!/bin/sh\nprintf '%s' "$1" > '${openedFile}'\n`);
    await chmod(script, 0o755);
  }

  const result = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(
      BIN,
      ['--server', 'http://127.0.0.1:8090', 'dashboard'],
      { cwd: dir, env: { PATH: `${dir}:${dirname(process.execPath)}:/usr/bin:/bin` } },
      (err, stdout) => resolve({ code: err ? Number(err.code) : 0, stdout }),
    );
  });

  assert.equal(result.code, 0);
  assert.ok(result.stdout.startsWith('Meshrelay UI: http://127.0.0.1:8090/\n'), result.stdout);
  await waitFor(async () => (await readFile(openedFile, 'utf8').catch(() => '')) === 'http://127.0.0.1:8090/', {
    message: 'the opener to be run with the address',
  });
});

test('given no desktop opener on PATH, when the dashboard is asked for, then the address is printed and meshctl exits 0', async (t) => {
  const dir = await tempDir(t);

  const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      BIN,
      ['--server', 'http://127.0.0.1:8090', 'dashboard'],
      { cwd: dir, env: { PATH: `${dir}:${dirname(process.execPath)}` } },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });

  assert.equal(result.code, 0, result.stderr);
  assert.ok(result.stdout.startsWith('Meshrelay UI: http://127.0.0.1:8090/\n'), result.stdout);
  assert.equal(result.stderr, '');
});
