// The behaviour every leader elector must show, written once and run against
// each backend (lease file, Kubernetes Lease on the fake API server).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import { waitFor } from '@meshrelay/testkit';
import {
  createLeaseElector,
  type ElectionTiming,
  type LeaderElector,
  type LeaseRecord,
  type LeaseStore,
} from '../../src/index.ts';

export const silentLogger = pino({ level: 'silent' });

export interface ElectionBackend {
  readonly timing: ElectionTiming;
  /** A candidate built with the backend's public constructor. */
  elector(identity: string): LeaderElector;
  /** A fresh store on the same lease, for candidates that need a wrapped store. */
  store(): LeaseStore;
  readLease(): Promise<LeaseRecord | undefined>;
}

/** Starts a candidate and stops it when the test ends. */
export function started(t: TestContext, elector: LeaderElector): LeaderElector {
  elector.start();
  t.after(() => elector.stop());
  return elector;
}

/** Samples isLeader() of every candidate every few ms and fails the test if two ever lead at once. */
export function watchForSplitBrain(
  t: TestContext,
  electors: readonly LeaderElector[],
): { readonly samples: () => number } {
  let samples = 0;
  let violation: string | undefined;
  const timer = setInterval(() => {
    samples++;
    const leaders = electors.filter((e) => e.isLeader()).map((e) => e.identity);
    if (leaders.length > 1) violation ??= `two leaders at once: ${leaders.join(', ')}`;
  }, 2);
  t.after(() => {
    clearInterval(timer);
    assert.equal(violation, undefined);
  });
  return { samples: () => samples };
}

export async function waitForLeader(electors: readonly LeaderElector[], timeoutMs: number): Promise<LeaderElector> {
  let leader: LeaderElector | undefined;
  await waitFor(() => (leader = electors.find((e) => e.isLeader())) !== undefined, {
    timeoutMs,
    intervalMs: 5,
    message: 'no candidate became leader',
  });
  return leader as LeaderElector;
}

export async function singleCandidateLeads(t: TestContext, backend: ElectionBackend): Promise<void> {
  const elector = started(t, backend.elector('replica-1'));
  const changes: boolean[] = [];
  elector.onChange((leader) => changes.push(leader));
  await waitForLeader([elector], 3 * backend.timing.retryPeriodMs + 2_000);
  const lease = await backend.readLease();
  assert.equal(lease?.holder, 'replica-1');
  assert.equal(lease?.transitions, 0);
  assert.equal(elector.holder(), 'replica-1');
  assert.deepEqual(changes, [true]);
}

export async function twoCandidatesOneLeader(t: TestContext, backend: ElectionBackend): Promise<void> {
  const electors = [backend.elector('replica-1'), backend.elector('replica-2')];
  const sampler = watchForSplitBrain(t, electors);
  for (const e of electors) started(t, e);
  const leader = await waitForLeader(electors, 3_000);
  // Several renewals long: the follower keeps trying and must keep failing.
  const until = Date.now() + 3 * backend.timing.renewDeadlineMs;
  await waitFor(() => Date.now() >= until, { timeoutMs: until - Date.now() + 1_000, intervalMs: 20 });
  assert.ok(leader.isLeader(), 'the first leader kept the lease');
  const follower = electors.find((e) => e !== leader) as LeaderElector;
  assert.equal(follower.isLeader(), false);
  assert.equal(follower.holder(), leader.identity, 'the follower sees who leads');
  assert.ok(sampler.samples() > 100, `sampled often (${sampler.samples()} samples)`);
}

export async function stoppedLeaderHandsOver(t: TestContext, backend: ElectionBackend): Promise<void> {
  const electors = [backend.elector('replica-1'), backend.elector('replica-2')];
  watchForSplitBrain(t, electors);
  for (const e of electors) started(t, e);
  const leader = await waitForLeader(electors, 3_000);
  const follower = electors.find((e) => e !== leader) as LeaderElector;
  const transitionsBefore = (await backend.readLease())?.transitions ?? 0;
  const stoppedAt = Date.now();
  await leader.stop();
  assert.equal(leader.isLeader(), false);
  await waitForLeader([follower], backend.timing.leaseDurationMs);
  const tookMs = Date.now() - stoppedAt;
  // Released, not expired: the follower does not wait out the lease.
  assert.ok(
    tookMs < backend.timing.leaseDurationMs,
    `took over after ${tookMs} ms, lease is ${backend.timing.leaseDurationMs} ms`,
  );
  const lease = await backend.readLease();
  assert.equal(lease?.holder, follower.identity);
  assert.equal(lease?.transitions, transitionsBefore + 1);
}

/** A store that stops answering on freeze(): a leader that is stuck (a hung API call, a frozen disk). */
export function freezableStore(store: LeaseStore): LeaseStore & { freeze(): void } {
  let frozen = false;
  return {
    description: store.description,
    freeze: () => (frozen = true),
    update: (decide) => (frozen ? new Promise(() => undefined) : store.update(decide)),
  };
}

export async function frozenLeaderExpiresFirst(t: TestContext, backend: ElectionBackend): Promise<void> {
  const frozenStore = freezableStore(backend.store());
  const stuck = started(
    t,
    createLeaseElector({ ...backend.timing, store: frozenStore, identity: 'stuck', logger: silentLogger }),
  );
  await waitForLeader([stuck], 3_000);
  const stuckSteppedDownAt: number[] = [];
  stuck.onChange((leader) => {
    if (!leader) stuckSteppedDownAt.push(Date.now());
  });
  const other = started(t, backend.elector('other'));
  watchForSplitBrain(t, [stuck, other]);
  let otherLeadAt = 0;
  other.onChange((leader) => {
    if (leader) otherLeadAt = Date.now();
  });
  frozenStore.freeze();
  // Renewals in flight when freezing may still land: the last renewTime is read after they settle.
  await waitFor(() => !stuck.isLeader(), { timeoutMs: backend.timing.leaseDurationMs, intervalMs: 5 });
  const lastRenew = (await backend.readLease())?.renewTimeMs ?? 0;
  await waitForLeader([other], backend.timing.leaseDurationMs + 2 * backend.timing.retryPeriodMs + 1_000);
  const leaseMs = (await backend.readLease())?.leaseDurationMs ?? 0;
  assert.ok(
    otherLeadAt >= lastRenew + backend.timing.leaseDurationMs,
    `took over ${otherLeadAt - lastRenew} ms after the last renewal; lease is ${backend.timing.leaseDurationMs} ms`,
  );
  assert.ok(leaseMs >= backend.timing.leaseDurationMs);
  assert.equal(stuckSteppedDownAt.length, 1, 'the stuck leader reported stepping down once');
  assert.ok(
    (stuckSteppedDownAt[0] as number) < otherLeadAt,
    'the stuck leader stepped down before the lease passed on',
  );
}
