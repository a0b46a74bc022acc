// The first step of `npm test`: makes sure the machine has what the suite needs before anything
// runs. Without it a fresh machine ran the whole suite for minutes and failed a hundred tests for
// want of one apt package each. Where it can install (root, apt-get on PATH) it does so and says so
// in one line; where it cannot, it stops at once with one message naming the packages and the
// command, and npm test runs nothing.
//
//   MESHRELAY_TEST_PREFLIGHT=check   never install: stop when something is missing (as a non-root user would)
//   MESHRELAY_TEST_PREFLIGHT=off     skip the check
//   --plan                           print what it would do as JSON and change nothing
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

interface Requirement {
  /** What the tests run: a command on PATH, or an absolute path they use as it is. */
  readonly command: string;
  /** The Debian package that provides it. */
  readonly aptPackage: string;
}

const REQUIREMENTS: readonly Requirement[] = [
  { command: 'redis-server', aptPackage: 'redis-server' },
  // Sentinel tests run `redis-server --sentinel`: the same package.
  // packages/testkit's browser helper launches this path.
  { command: '/usr/bin/chromium', aptPackage: 'chromium' },
  { command: 'prometheus', aptPackage: 'prometheus' },
  { command: 'promtool', aptPackage: 'prometheus' },
];

const HELM = join(ROOT, '.tools/helm/helm');

interface PreflightPlan {
  /** `ok`: nothing missing; `install`: apt-get installs `packages`; `stop`: the user must. */
  readonly action: 'ok' | 'install' | 'stop';
  readonly missing: readonly string[];
  readonly packages: readonly string[];
  /** The command that installs them. */
  readonly command: string;
  /** Whether helm and kubectl must be fetched into .tools/ (scripts/install-helm.sh; no root needed). */
  readonly helm: boolean;
}

function onPath(command: string): boolean {
  const candidates = command.startsWith('/')
    ? [command]
    : (process.env['PATH'] ?? '')
        .split(delimiter)
        .filter((d) => d !== '')
        .map((d) => join(d, command));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function planPreflight(): PreflightPlan {
  const missing = REQUIREMENTS.filter((r) => !onPath(r.command));
  const packages = [...new Set(missing.map((r) => r.aptPackage))];
  const asRoot = process.getuid?.() === 0 && process.env['MESHRELAY_TEST_PREFLIGHT'] !== 'check';
  const canInstall = asRoot && onPath('apt-get');
  const command = `${asRoot ? '' : 'sudo '}apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  return {
    action: packages.length === 0 ? 'ok' : canInstall ? 'install' : 'stop',
    missing: missing.map((r) => r.command),
    packages,
    command,
    helm: !existsSync(HELM),
  };
}

function stop(lines: readonly string[]): never {
  process.stderr.write(`${lines.join('\n')}\n`);
  process.exit(1);
}

function installPackages(plan: PreflightPlan): void {
  console.log(
    `test preflight: installing ${plan.packages.join(' ')} with apt-get (missing: ${plan.missing.join(', ')})`,
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { env, encoding: 'utf8' });
  const install =
    update.status === 0
      ? spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...plan.packages], {
          env,
          encoding: 'utf8',
        })
      : update;
  if (install.status !== 0) {
    stop([
      `test preflight: apt-get could not install ${plan.packages.join(' ')}; nothing was run. Its last words:`,
      ...`${install.stderr ?? ''}`.trim().split('\n').slice(-5),
      `Install them yourself: ${plan.command}`,
    ]);
  }
  const still = planPreflight().missing;
  if (still.length > 0)
    stop([`test preflight: after apt-get, ${still.join(', ')} still cannot be found on PATH; nothing was run.`]);
}

function installHelm(): void {
  const run = spawnSync('bash', [join(ROOT, 'scripts/install-helm.sh')], { encoding: 'utf8' });
  if (run.status !== 0 || !existsSync(HELM)) {
    stop([
      `test preflight: scripts/install-helm.sh could not fetch helm and kubectl into .tools/ (the chart tests need them); nothing was run.`,
      ...`${run.stderr}`.trim().split('\n').slice(-5),
    ]);
  }
  console.log('test preflight: installed helm and kubectl into .tools/ (scripts/install-helm.sh)');
}

function main(): void {
  if (process.env['MESHRELAY_TEST_PREFLIGHT'] === 'off') return;
  const plan = planPreflight();
  if (process.argv.includes('--plan')) {
    console.log(JSON.stringify(plan));
    return;
  }
  if (plan.action === 'stop') {
    stop([
      `test preflight: the tests need ${plan.missing.join(', ')}, which this machine lacks; nothing was run. Install the Debian packages with:`,
      `  ${plan.command}`,
      'then run npm test again (.ci/run installs them on a clean machine).',
    ]);
  }
  if (plan.action === 'install') installPackages(plan);
  if (plan.helm) installHelm();
}

main();
