// `npm test` starts with scripts/test-preflight.ts: on a machine that lacks what the suite needs it
// installs it (root with apt-get) or stops at once with one message, running nothing. These tests
// run the real script and the real `npm test` with a PATH that lacks redis-server and Prometheus;
// the apt-get install itself is not run here (it would change the machine).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ROOT } from './helm-runner.ts';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

interface Plan {
  readonly action: string;
  readonly missing: string[];
  readonly packages: string[];
  readonly command: string;
}

/** A PATH directory holding only `tools` (name → target): the machine as far as the script can see. */
async function bareBin(t: TestContext, tools: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-preflight-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const [name, target] of Object.entries(tools)) symlinkSync(target, join(dir, name));
  return dir;
}

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      command,
      [...args],
      { cwd: ROOT, env: { HOME: process.env['HOME'], ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

const NODE = process.execPath;
const PREFLIGHT = join(ROOT, 'scripts/test-preflight.ts');

test(
  'given a machine without redis-server and Prometheus where nothing may be installed, when the preflight runs, then it stops with one message naming the packages and the command',
  { timeout: 60_000 },
  async (t) => {
    const bin = await bareBin(t, { node: NODE });

    const result = await run(join(bin, 'node'), [PREFLIGHT], { PATH: bin, MESHRELAY_TEST_PREFLIGHT: 'check' });

    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.match(
      result.stderr,
      /^test preflight: the tests need redis-server, prometheus, promtool, which this machine lacks; nothing was run\./,
    );
    assert.match(result.stderr, /\n {2}(sudo )?apt-get install -y --no-install-recommends redis-server prometheus\n/);
    assert.equal(result.stderr.trim().split('\n').length, 3, 'one message');
  },
);

test(
  'given the same machine as root with apt-get, when the preflight plans, then it installs those packages itself',
  { timeout: 60_000 },
  async (t) => {
    const aptGet = ['/usr/bin/apt-get', '/bin/apt-get'].find((p) => existsSync(p));
    assert.ok(aptGet, 'these machines are Debian: apt-get is there');
    const bin = await bareBin(t, { node: NODE, 'apt-get': aptGet });

    const result = await run(join(bin, 'node'), [PREFLIGHT, '--plan'], { PATH: bin });

    assert.equal(result.code, 0, result.stderr);
    const plan = JSON.parse(result.stdout) as Plan;
    assert.deepEqual(plan.packages, ['redis-server', 'prometheus']);
    assert.equal(plan.action, process.getuid?.() === 0 ? 'install' : 'stop');
  },
);

test(
  'given a machine with everything the suite needs, when the preflight plans, then there is nothing to do',
  { timeout: 60_000 },
  async () => {
    const result = await run(NODE, [PREFLIGHT, '--plan'], { PATH: process.env['PATH'] });

    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), {
      action: 'ok',
      missing: [],
      packages: [],
      command: 'apt-get install -y --no-install-recommends ',
      helm: false,
    });
  },
);

test(
  'given npm test on a machine lacking redis-server where nothing may be installed, when run, then it fails at once and runs none of its later steps',
  { timeout: 60_000 },
  async (t) => {
    const npm = ['/usr/bin/npm', '/usr/local/bin/npm'].find((p) => existsSync(p));
    assert.ok(npm, 'npm is on this machine');
    const bin = await bareBin(t, { node: NODE, npm, sh: '/bin/sh' });

    const result = await run(join(bin, 'npm'), ['test'], {
      PATH: bin,
      MESHRELAY_TEST_PREFLIGHT: 'check',
      npm_config_update_notifier: 'false',
    });

    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /test preflight: the tests need redis-server/);
    // npm echoes each script it starts as `> meshrelay@<version> <script>`: only `test` started.
    assert.deepEqual(
      [...`${result.stdout}${result.stderr}`.matchAll(/^> meshrelay@\S+ (\S+)/gm)].map((m) => m[1]),
      ['test'],
    );
  },
);
