// `npx meshctl`, `npx meshrelay-server` and `npx meshrelay-agent` in a clone run the bins the
// workspaces link into node_modules/.bin, on the Node the install brings. When the root package
// also declared those bins, npx installed the repository into its own cache first, and that
// install checked the root's engines against the Node running npm: on a machine whose Node is
// older, every first run printed EBADENGINE warnings before the answer.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helm-runner.ts';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function npx(args: readonly string[], cache: string): Promise<Run> {
  const env = {
    ...process.env,
    // A cache of its own: npx's install into the cache happens only when the cache lacks it.
    npm_config_cache: cache,
    npm_config_update_notifier: 'false',
    PATH: [join(ROOT, 'node_modules/.bin'), process.env['PATH'] ?? ''].join(delimiter),
  };
  return new Promise((resolve) => {
    execFile('npx', [...args], { cwd: ROOT, env, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

test(
  'given a fresh npm cache, when each binary is run through npx, then it answers with nothing on stderr and npx installs nothing',
  { timeout: 300_000 },
  async (t) => {
    const cache = await mkdtemp(join(tmpdir(), 'meshrelay-npx-'));
    t.after(() => rm(cache, { recursive: true, force: true }));
    const { version } = JSON.parse(readFileSync(join(ROOT, 'packages/meshctl/package.json'), 'utf8')) as {
      version: string;
    };

    const results = [];
    for (const args of [
      ['meshctl', '--version'],
      ['meshrelay-server', '--help'],
      ['meshrelay-agent', '--help'],
    ]) {
      results.push({ args, run: await npx(args, cache) });
    }

    for (const { args, run } of results) {
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
      assert.equal(run.stderr, '', `${args.join(' ')} printed on stderr`);
    }
    assert.equal(results[0]?.run.stdout.trim(), version);
    assert.match(results[1]?.run.stdout ?? '', /^Usage: meshrelay-server/);
    assert.match(results[2]?.run.stdout ?? '', /^Usage: meshrelay-agent/);
    const installed = existsSync(join(cache, '_npx')) ? readdirSync(join(cache, '_npx')) : [];
    assert.deepEqual(installed, [], 'npx installed the repository into its cache (and checked its engines doing so)');
  },
);

test(
  'given the binaries run through npx, when they report the Node running them, then it is the one the install brings',
  { timeout: 120_000 },
  async (t) => {
    const cache = await mkdtemp(join(tmpdir(), 'meshrelay-npx-'));
    t.after(() => rm(cache, { recursive: true, force: true }));
    const bundled = join(ROOT, 'node_modules/.bin/node');

    // `npx node` resolves node the way a bin's `#!/usr/bin/env node` line does under npx.
    const run = await npx(['node', '-p', 'process.execPath'], cache);

    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), realpathSync(bundled));
  },
);
