// The test files of `npm test`, in two phases:
//  1. every file that shares nothing with the others and does not measure time, several at once
//     (MESHRELAY_TEST_CONCURRENCY, default: cores + 1; test files mostly wait on processes and timers);
//  2. then, one at a time, the files listed in SERIAL: they assert that something happens within a
//     time (a heartbeat that never pauses for a second, a timeout that fires), bind fixed ports, or run
//     a bench; another file's load would make them fail for reasons that are not theirs.
// Exits with the first failing phase's code, after running both (a failure in phase 1 still shows
// phase 2's results).
import { spawnSync } from 'node:child_process';
import { globSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const PATTERNS = ['packages/*/test/**/*.test.ts', 'bench/test/*.test.ts', 'e2e/**/*.test.ts'];

/** Files that run alone; each with the reason. */
const SERIAL: Readonly<Record<string, string>> = {
  'bench/test/tier-m-heartbeat.test.ts': 'tier M cold translation; heartbeats must never pause for a second',
  'packages/mgmt-server/test/intake-responsiveness.test.ts':
    'heartbeat and /healthz pause limits during a 16 MiB intake',
  'packages/agent/test/output-responsiveness.test.ts': 'heartbeat and /healthz pause limits during an 8 MiB apply',
  'packages/mgmt-server/test/relay-idle-connections.test.ts': 'idle timeouts measured against the clock',
  'packages/mgmt-server/test/translation-heartbeat.test.ts':
    'a 100 ms timer must never wait a second during a cold translation',
  'packages/mgmt-server/test/relay-delta-limits.test.ts': 'heartbeats keep their timing while a delta is refused',
  'packages/agent/test/pull-stream-limits.test.ts': "the agent's heartbeats keep their timing while a delta is refused",
  'packages/agent/test/agent-leader.test.ts': 'lease durations and renew deadlines measured against the clock',
  'e2e/faults/restart.test.ts': 'safe-start windows measured against the clock',
  'packages/mgmt-server/test/ui.test.ts': 'a safe-start countdown read live in the browser',
  'e2e/run-local.test.ts': "npm start's fixed ports and .run/",
  'e2e/examples.test.ts': "npm start's fixed ports and .run/",
  'e2e/faults/agents.test.ts': 'frozen processes noticed within heartbeat timeouts',
  'e2e/faults/replicas.test.ts': 'frozen replicas left within heartbeat timeouts',
  'e2e/gloo-fidelity.test.ts': 'many processes with convergence deadlines',
  'e2e/revocation.test.ts': 'certificates that live 3 s',
};

const files = [...new Set(PATTERNS.flatMap((p) => globSync(p, { cwd: root })))].sort();
const missing = Object.keys(SERIAL).filter((f) => !files.includes(f));
if (missing.length > 0) {
  console.error(`scripts/run-tests.ts: SERIAL names files that do not exist: ${missing.join(', ')}`);
  process.exit(2);
}
const serial = files.filter((f) => SERIAL[f] !== undefined);
const parallel = files.filter((f) => SERIAL[f] === undefined);
const concurrency = Number(process.env['MESHRELAY_TEST_CONCURRENCY'] ?? availableParallelism() + 1);
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(
    `MESHRELAY_TEST_CONCURRENCY must be a whole number of files at once, not "${process.env['MESHRELAY_TEST_CONCURRENCY']}"`,
  );
  process.exit(2);
}

/**
 * Node's compile cache for every test file's process and what it starts: each of ~260 files loads
 * much the same modules, and compiling them again is most of a small file's time (importing the
 * server, agent and testkit packages: 1.7 s without, 1.0 s with). Kept beside the binaries' caches.
 */
const compileCache = process.env['NODE_COMPILE_CACHE'] ?? join(root, '.compile-cache');

/** How many of a phase's slowest files its summary names. */
const SLOWEST_SHOWN = 8;

/** The slowest files of a phase, from the lines scripts/test-exit-watchdog.ts wrote at each file's exit. */
function slowestFiles(timesFile: string): string[] {
  let text = '';
  try {
    text = readFileSync(timesFile, 'utf8');
  } catch {
    return [];
  }
  const times = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { file: string; seconds: number; cpuSeconds?: number })
    .sort((a, b) => b.seconds - a.seconds);
  const cpu = (t: { cpuSeconds?: number }) =>
    t.cpuSeconds === undefined ? '' : `  (${t.cpuSeconds.toFixed(1).padStart(5)} CPU-s with its children)`;
  const totalCpu = times.reduce((sum, t) => sum + (t.cpuSeconds ?? 0), 0);
  return [
    ...times
      .slice(0, SLOWEST_SHOWN)
      .map((t) => `#   ${t.seconds.toFixed(1).padStart(6)} s  ${relative(root, t.file)}${cpu(t)}`),
    `#   ${times.length} files used ${totalCpu.toFixed(0)} CPU-seconds with their children`,
  ];
}

function phase(title: string, list: readonly string[], filesAtOnce: number): number {
  console.log(`\n# ${title}: ${list.length} files, ${filesAtOnce} at once`);
  const started = Date.now();
  const timesDir = mkdtempSync(join(tmpdir(), 'meshrelay-test-times-'));
  const timesFile = join(timesDir, 'times.jsonl');
  const result = spawnSync(
    process.execPath,
    [
      '--test',
      '--test-timeout=300000',
      '--import',
      './scripts/test-exit-watchdog.ts',
      `--test-concurrency=${filesAtOnce}`,
      ...list,
    ],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, NODE_COMPILE_CACHE: compileCache, MESHRELAY_TEST_TIMES: timesFile },
    },
  );
  console.log(
    `# ${title}: ${result.status === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  const slowest = slowestFiles(timesFile);
  if (slowest.length > 0) console.log(`# the slowest of them:\n${slowest.join('\n')}`);
  rmSync(timesDir, { recursive: true, force: true });
  return result.status ?? 1;
}

const first = phase('files that run side by side', parallel, concurrency);
const second = phase('files that run alone', serial, 1);
process.exit(first !== 0 ? first : second);
