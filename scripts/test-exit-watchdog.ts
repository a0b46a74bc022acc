/**
 * Loaded into every test file's process (`node --test --import ./scripts/test-exit-watchdog.ts`).
 * A file whose tests have all ended but which still holds a handle open (a client library's
 * pending timer, a leaked socket) is ended GRACE_MS later, after its report has reached the
 * runner, and says so on stderr. This replaces `--test-force-exit`, which ends the process the
 * moment its tests end and so can cut off the report of tests that already finished.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { after } from 'node:test';

const GRACE_MS = 10_000;

// Only in a test file's own process: the runner that spawns them has no tests to wait for.
if (process.env['NODE_TEST_CONTEXT'] !== undefined) {
  after(() => {
    setTimeout(() => {
      const open = process.getActiveResourcesInfo().join(', ');
      process.stderr.write(
        `test-exit-watchdog: ${process.argv[1] ?? 'a test file'} still running ${GRACE_MS / 1000} s after its tests ended (open: ${open}); ending it\n`,
      );
      process.exit();
    }, GRACE_MS).unref();
  });
}

/**
 * CPU-seconds this process and the children it has waited for used (Linux: /proc/self/stat's
 * utime, stime, cutime, cstime). The servers, agents, Redis and browsers a test file starts are its
 * children, so this is the file's whole cost. Undefined where there is no /proc.
 */
function cpuSecondsWithChildren(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold spaces) start at state, field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return ticks / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
/** USER_HZ: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

// When the runner asks (scripts/run-tests.ts sets MESHRELAY_TEST_TIMES to a file), each test file's
// process adds one line at exit: its path, how long the process lived (start-up and all), and the
// CPU-seconds it and its children used.
const timesFile = process.env['MESHRELAY_TEST_TIMES'];
if (process.env['NODE_TEST_CONTEXT'] !== undefined && timesFile !== undefined && timesFile !== '') {
  process.on('exit', () => {
    const line = JSON.stringify({
      file: process.argv[1] ?? '?',
      seconds: performance.now() / 1000,
      cpuSeconds: cpuSecondsWithChildren(),
    });
    appendFileSync(timesFile, `${line}\n`);
  });
}
