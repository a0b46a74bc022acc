import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { DirectoryDocumentStore } from '@meshrelay/registry';
import { waitFor } from '@meshrelay/testkit';
import { InterestLeases } from '../src/interests/interest-leases.ts';

const IDLE_MS = 10 * 60_000;
const T0 = Date.parse('2026-11-29T10:00:00Z');

/** A clock the test moves by hand. */
function clock(): { now: () => number; advance: (ms: number) => void } {
  let at = T0;
  return { now: () => at, advance: (ms) => void (at += ms) };
}

async function leases(
  t: TestContext,
  now: () => number,
  dir?: string,
): Promise<{ leases: InterestLeases; dir: string }> {
  const root = dir ?? (await mkdtemp(join(tmpdir(), 'meshrelay-interests-')));
  if (dir === undefined) t.after(() => rm(root, { recursive: true, force: true }));
  const store = new InterestLeases({
    documents: new DirectoryDocumentStore(root),
    idleMs: IDLE_MS,
    logger: pino({ level: 'silent' }),
    now,
    checkIntervalMs: 20,
  });
  await store.start();
  t.after(() => store.stop());
  return { leases: store, dir: root };
}

const report = (...hosts: string[]) => ({ hosts: hosts.map((host) => ({ host, source: 'xds' })) });

test('given no lease, when an agent reports a host, then the cluster holds it at once and listeners hear of that cluster', async (t) => {
  const c = clock();
  const { leases: store } = await leases(t, c.now);
  const heard: string[][] = [];
  store.onChange((clusters) => heard.push([...clusters]));
  const added = store.renew('cluster-a', report('Reviews.Global', 'ratings.global'));
  assert.deepEqual(added, ['reviews.global', 'ratings.global']);
  assert.deepEqual([...store.held('cluster-a')].sort(), ['ratings.global', 'reviews.global']);
  assert.deepEqual([...store.held('cluster-b')], []);
  assert.deepEqual(heard, [['cluster-a']]);
});

test('given a held host, when it is renewed within the idle time, then it is still held a whole idle time later and a renewal is no change', async (t) => {
  const c = clock();
  const { leases: store } = await leases(t, c.now);
  store.renew('cluster-a', report('reviews.global'));
  let changes = 0;
  store.onChange(() => (changes += 1));
  // Agents renew twice per idle time: one quiet window in between does not drop the lease.
  c.advance(IDLE_MS / 2);
  assert.deepEqual(store.renew('cluster-a', report('reviews.global')), []);
  c.advance(IDLE_MS - 1);
  assert.ok(store.held('cluster-a').has('reviews.global'));
  assert.equal(changes, 0);
});

test('given a held host, when no report renews it for the idle time, then it expires and listeners hear of the cluster', async (t) => {
  const c = clock();
  const { leases: store } = await leases(t, c.now);
  store.renew('cluster-a', report('reviews.global'));
  const heard: string[] = [];
  store.onChange((clusters) => heard.push(...clusters));
  c.advance(IDLE_MS);
  assert.equal(store.held('cluster-a').size, 0);
  await waitFor(() => heard.includes('cluster-a'), { timeoutMs: 5000 });
  assert.deepEqual(store.list(), [{ cluster: 'cluster-a', leases: [] }]);
});

test('given leases written by one server, when another starts on the same store, then it holds them with their expiry', async (t) => {
  const c = clock();
  const { leases: first, dir } = await leases(t, c.now);
  first.renew('cluster-a', report('reviews.global'));
  await first.stop();
  c.advance(60_000);
  const { leases: second } = await leases(t, c.now, dir);
  assert.ok(second.held('cluster-a').has('reviews.global'));
  const [entry] = second.list();
  assert.equal(entry?.leases[0]?.expiresAt, T0 + IDLE_MS);
  c.advance(IDLE_MS);
  assert.equal(second.held('cluster-a').size, 0);
});

test('given two replicas on one store, when one takes a lease, then the other holds it too and hears of the cluster', async (t) => {
  const c = clock();
  const { leases: one, dir } = await leases(t, c.now);
  const { leases: two } = await leases(t, c.now, dir);
  const heard: string[] = [];
  two.onChange((clusters) => heard.push(...clusters));
  one.renew('cluster-b', report('ratings.global'));
  await waitFor(() => two.held('cluster-b').has('ratings.global'), { timeoutMs: 5000 });
  assert.ok(heard.includes('cluster-b'));
});

test('given a report with malformed and oversized hosts, when renewed, then only DNS names are held', async (t) => {
  const c = clock();
  const { leases: store } = await leases(t, c.now);
  store.renew('cluster-a', {
    hosts: [{ host: 'ok.global', source: 'access-log' }, { host: 'bad host' }, { host: `${'a'.repeat(300)}.x` }, {}],
  });
  assert.deepEqual([...store.held('cluster-a')], ['ok.global']);
  assert.equal(store.list()[0]?.leases[0]?.source, 'access-log');
});

test('given a deregistered cluster, when forgotten, then its leases are gone for a server that starts afterwards', async (t) => {
  const c = clock();
  const { leases: first, dir } = await leases(t, c.now);
  first.renew('cluster-a', report('reviews.global'));
  first.forget('cluster-a');
  await first.stop();
  const { leases: second } = await leases(t, c.now, dir);
  assert.equal(second.held('cluster-a').size, 0);
});
