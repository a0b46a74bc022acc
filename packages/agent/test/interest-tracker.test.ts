import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { relay } from '@meshrelay/api';
import { InterestTracker, hostOf, subscribedNames } from '../src/interest/interest-tracker.ts';

/** A tracker whose reports land in `sent` (one entry per report: its hosts) while `open` is true. */
function tracker(): { tracker: InterestTracker; sent: string[][]; setOpen: (open: boolean) => void } {
  const sent: string[][] = [];
  let open = true;
  const t = new InterestTracker({
    send: (report: relay.v1.IInterestReport) => {
      if (!open) return false;
      sent.push((report.hosts ?? []).map((h) => `${h.host}/${h.source}`));
      return true;
    },
    renewIntervalMs: 60_000,
  });
  return { tracker: t, sent, setOpen: (o) => void (open = o) };
}

test('hostOf reads hosts from listener, cluster and authority names and ignores the rest', () => {
  assert.equal(hostOf('reviews.global:9080'), 'reviews.global');
  assert.equal(hostOf('outbound|9080|v1|Reviews.Global'), 'reviews.global');
  assert.equal(hostOf('ratings.bookinfo.svc.cluster.local'), 'ratings.bookinfo.svc.cluster.local');
  assert.equal(hostOf('unknown'), undefined);
  assert.equal(hostOf('inbound|9080||'), undefined);
  assert.equal(hostOf('[::1]:80'), undefined);
});

test('given a proxy subscribing to a new host, when seen, then it is reported at once and only once', () => {
  const { tracker: t, sent } = tracker();
  t.subscribed(
    subscribedNames([{ subscribed: { lds: ['reviews.global:9080'], cds: ['outbound|9080||reviews.global'] } }]),
  );
  t.subscribed(['reviews.global:9080']);
  assert.deepEqual(sent, [['reviews.global/xds']]);
});

test('given hosts in use, when renewed, then every one goes out; one no longer used is dropped and sent at once on its next use', () => {
  const { tracker: t, sent } = tracker();
  t.subscribed(['reviews.global:9080']);
  t.used('outbound|9080||ratings.global');
  t.renew();
  assert.deepEqual(sent.at(-1), ['reviews.global/xds', 'ratings.global/access-log']);
  const before = sent.length;
  t.subscribed([]);
  t.renew();
  assert.equal(sent.length, before, 'nothing in use: nothing renewed');
  t.subscribed(['reviews.global:9080']);
  assert.equal(sent.length, before + 1);
  assert.deepEqual(sent.at(-1), ['reviews.global/xds']);
});

test('given no open stream, when a host is new, then it goes out in full when the next stream opens', () => {
  const { tracker: t, sent, setOpen } = tracker();
  setOpen(false);
  t.subscribed(['reviews.global:9080']);
  assert.deepEqual(sent, []);
  setOpen(true);
  t.streamOpened();
  assert.deepEqual(sent, [['reviews.global/xds']]);
});
