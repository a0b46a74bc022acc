// The translation loop with interest scoping: a destination reaches a consuming cluster's output only
// while that cluster holds an interest; an interest change re-scopes without translating again and
// touches only that cluster; a change a cluster has no interest in is not sent to it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { buildEndpointSlice, buildNode, buildPod, buildService, buildVirtualDestination } from '@meshrelay/testkit';
import type { InterestScope } from '../src/translation-loop.ts';
import { translationSetup } from './translation-setup.ts';

const ports = [{ name: 'http', port: 8080 }];

/** Cluster `a`: the reviews Service with `ips` as endpoints and the reviews.global VirtualDestination. */
function inputA(generation: number, ips: readonly string[]) {
  const resources: Resource[] = [
    buildNode({ name: 'node-a', region: 'r1', zone: 'z1' }),
    buildService({ name: 'reviews', namespace: 'ns', ports, labels: { app: 'reviews' } }),
    buildEndpointSlice({
      service: 'reviews',
      namespace: 'ns',
      ports,
      endpoints: ips.map((ip, i) => ({ ip, pod: `reviews-${i}`, node: 'node-a' })),
    }),
    ...ips.map((ip, i) =>
      buildPod({ name: `reviews-${i}`, namespace: 'ns', ip, node: 'node-a', labels: { app: 'reviews' } }),
    ),
    buildVirtualDestination({
      name: 'reviews-global',
      namespace: 'ns',
      hosts: ['reviews.global'],
      services: [{ labels: { app: 'reviews' }, namespace: 'ns' }],
      ports: [{ number: 8080, protocol: 'HTTP' }],
    }),
  ];
  return buildInputSnapshot({ cluster: 'a', epoch: 'e', generation, resources });
}

const inputB = buildInputSnapshot({
  cluster: 'b',
  epoch: 'e',
  generation: 1,
  resources: [buildNode({ name: 'node-b', region: 'r2', zone: 'z2' })],
});

/** A hand-moved interest scope: the hosts each cluster holds. */
function scope(): InterestScope & { hold: (cluster: string, ...hosts: string[]) => void } {
  const held = new Map<string, Set<string>>();
  let version = 0;
  return {
    get version() {
      return version;
    },
    held: (cluster) => held.get(cluster) ?? new Set(),
    hold: (cluster, ...hosts) => {
      held.set(cluster, new Set(hosts));
      version += 1;
    },
  };
}

const hasReviews = (o: OutputSnapshot | undefined): boolean =>
  (o?.resources ?? []).some(
    (r) => r.kind === 'ServiceEntry' && ((r.spec as { hosts?: string[] }).hosts ?? []).includes('reviews.global'),
  );

test(
  'given interest scoping, when interests and inputs change, then only interested clusters carry and receive the destination',
  { timeout: 60_000 },
  async (t) => {
    const interests = scope();
    const { registry, store, outputs, metrics, loop } = await translationSetup(t, {
      keyPrefix: 'interest',
      commandTimeoutMs: 5000,
      scope: interests,
    });
    const translations = async () =>
      (await metrics.translationDuration.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
    const avoided = async () => (await metrics.interestPushesAvoided.get()).values[0]?.value ?? 0;
    await registry.register('a', {});
    await registry.register('b', {});
    await store.putInput(inputA(1, ['10.0.0.1']));
    await store.putInput(inputB);
    await loop.runNow();
    assert.ok(hasReviews(outputs.current('a')), 'the defining cluster keeps its destination');
    assert.equal(hasReviews(outputs.current('b')), false, 'b has no interest: left out');

    const aBefore = outputs.current('a');
    const runs = await translations();
    interests.hold('b', 'reviews.global');
    await loop.runNow();
    assert.ok(hasReviews(outputs.current('b')), 'a lease brings the destination in');
    assert.equal(await translations(), runs, 'an interest change is not translated again');
    assert.equal(outputs.current('a'), aBefore, "another cluster's output is untouched");
    const reasons = loop
      .scoping()
      .get('b')
      ?.destinations.map((d) => d.reason);
    assert.deepEqual(reasons, ['lease']);

    interests.hold('b');
    await loop.runNow();
    const quiet = outputs.current('b');
    assert.equal(hasReviews(quiet), false, 'an expired lease takes it out again');
    await store.putInput(inputA(2, ['10.0.0.1', '10.0.0.2']));
    await loop.runNow();
    assert.notEqual(outputs.current('a')?.hash, aBefore?.hash, 'the change reached a');
    // Same content (provenance may name the new input: it is refreshed in place, never sent).
    assert.equal(outputs.current('b')?.hash, quiet?.hash, 'b was not sent a change it has no interest in');
    assert.equal(await avoided(), 1);
  },
);
