import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { FileLeaseStore, createFileLeaderElector, parseLeaseFile } from '../src/index.ts';
import {
  frozenLeaderExpiresFirst,
  silentLogger,
  singleCandidateLeads,
  started,
  stoppedLeaderHandsOver,
  twoCandidatesOneLeader,
  waitForLeader,
  type ElectionBackend,
} from './support/election-scenarios.ts';

const TIMING = { leaseDurationMs: 900, renewDeadlineMs: 600, retryPeriodMs: 100 };

function fileBackend(t: TestContext): ElectionBackend & { readonly file: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'meshrelay-lease-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'leases', 'agent.lease');
  return {
    file,
    timing: TIMING,
    elector: (identity) => createFileLeaderElector({ path: file, identity, logger: silentLogger, ...TIMING }),
    store: () => new FileLeaseStore({ path: file, staleLockMs: TIMING.leaseDurationMs, logger: silentLogger }),
    readLease: async () => (existsSync(file) ? parseLeaseFile(readFileSync(file, 'utf8')) : undefined),
  };
}

test('given one candidate on a new lease file, when it campaigns, then it leads and the file names it', async (t) => {
  await singleCandidateLeads(t, fileBackend(t));
});

test('given two candidates on one lease file, when both campaign, then exactly one leads at every sample', async (t) => {
  await twoCandidatesOneLeader(t, fileBackend(t));
});

test('given a leader and a follower, when the leader stops, then the follower takes over before the lease would expire', async (t) => {
  await stoppedLeaderHandsOver(t, fileBackend(t));
});

test('given a leader that can no longer renew, when the lease runs out, then it steps down first and the other takes over only after the lease duration', async (t) => {
  await frozenLeaderExpiresFirst(t, fileBackend(t));
});

test('given the lock held by a live writer, when a candidate campaigns, then it does not lead until the lock is released', async (t) => {
  const backend = fileBackend(t);
  const lock = `${backend.file}.lock`;
  const first = started(t, backend.elector('first'));
  await waitForLeader([first], 3_000);
  await first.stop();
  writeFileSync(lock, 'someone else\n');
  const candidate = started(t, backend.elector('candidate'));
  const until = Date.now() + 3 * TIMING.retryPeriodMs;
  await waitFor(() => Date.now() >= until, { intervalMs: 10 });
  assert.equal(candidate.isLeader(), false, 'a busy lock is a lost race, not a win');
  rmSync(lock);
  await waitForLeader([candidate], 3_000);
});

test('given a lock left by a process that died mid-update, when it is older than the lease duration, then a candidate breaks it and leads', async (t) => {
  const backend = fileBackend(t);
  const lock = `${backend.file}.lock`;
  const first = started(t, backend.elector('first'));
  await waitForLeader([first], 3_000);
  await first.stop();
  writeFileSync(lock, '12345 dead\n');
  const old = new Date(Date.now() - 10 * TIMING.leaseDurationMs);
  utimesSync(lock, old, old);
  const candidate = started(t, backend.elector('candidate'));
  await waitForLeader([candidate], 3_000);
  assert.equal((await backend.readLease())?.holder, 'candidate');
});

test('given a lease file that is not JSON, when it is parsed, then it is not a lease', () => {
  assert.equal(parseLeaseFile('{"holder":'), undefined);
  assert.equal(
    parseLeaseFile('{"holder":"a","acquireTime":"x","renewTime":"y","leaseDurationMs":1,"transitions":0}'),
    undefined,
  );
});

test('given a renew deadline not shorter than the lease duration, when an elector is built, then it is refused with the reason', () => {
  assert.throws(
    () =>
      createFileLeaderElector({
        path: '/tmp/x.lease',
        identity: 'a',
        logger: silentLogger,
        leaseDurationMs: 1000,
        renewDeadlineMs: 1000,
        retryPeriodMs: 100,
      }),
    (err: Error & { code?: string }) =>
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      /renewDeadlineMs \(1000\) must be shorter than leaseDurationMs/.test(err.message),
  );
});
