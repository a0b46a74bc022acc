import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { closedPortUrl } from './harness.ts';

const BIN = fileURLToPath(new URL('../bin/meshctl.js', import.meta.url));

function run(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      BIN,
      [...args],
      { env: { PATH: `${process.execPath.replace(/\/[^/]+$/, '')}:${process.env['PATH'] ?? ''}` } },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
      },
    );
  });
}

test('given the installed launcher, when --version runs, then it prints the package version and exits 0', async () => {
  const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };

  const result = await run(['--version']);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `${version}\n`);
});

test('given the installed launcher and no server, when clusters are listed, then the process exits 1 with one line', async () => {
  const url = await closedPortUrl();

  const result = await run([
    '--server',
    url,
    '--admin-token',
    'token-for-a-server-that-is-not-there',
    'cluster',
    'list',
  ]);

  assert.equal(result.code, 1);
  assert.match(result.stderr, /^meshctl: cannot reach the management server at [^\n]+\n$/);
});
