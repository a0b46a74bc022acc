import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SOURCES_ANNOTATION, buildOutputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { OutputScoper, scopeOutput } from '../src/interests/output-scope.ts';

const REVIEWS = 'VirtualDestination/bookinfo/reviews@cluster-a';
const RATINGS = 'VirtualDestination/bookinfo/ratings@cluster-b';

function serviceEntry(name: string, host: string, source: string, endpointCluster: string): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: 'bookinfo', annotations: { [SOURCES_ANNOTATION]: source } },
    spec: {
      hosts: [host],
      ports: [{ name: 'http', number: 9080, protocol: 'HTTP' }],
      endpoints: [{ address: '10.0.0.1', labels: { 'topology.istio.io/cluster': endpointCluster } }],
    },
  };
}

function destinationRule(name: string, host: string, sources: string): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'DestinationRule',
    metadata: { name, namespace: 'bookinfo', annotations: { [SOURCES_ANNOTATION]: sources } },
    spec: { host },
  };
}

function virtualService(name: string, host: string, sources: string): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name, namespace: 'bookinfo', annotations: { [SOURCES_ANNOTATION]: sources } },
    spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
  };
}

/** cluster-c's unscoped output: two destinations defined elsewhere, backends elsewhere. */
function outputOfC(extra: Resource[] = [], ratingsEndpointCluster = 'cluster-b'): OutputSnapshot {
  return buildOutputSnapshot({
    cluster: 'cluster-c',
    provenance: [{ cluster: 'cluster-a', inputHash: 'a'.repeat(64) }],
    resources: [
      serviceEntry('reviews-vd', 'reviews.global', REVIEWS, 'cluster-a'),
      destinationRule('reviews-vd', 'reviews.global', `FailoverPolicy/bookinfo/f@cluster-a,${REVIEWS}`),
      serviceEntry('ratings-vd', 'ratings.global', RATINGS, ratingsEndpointCluster),
      destinationRule('ratings-vd', 'ratings.global', RATINGS),
      ...extra,
    ],
  });
}

const names = (o: OutputSnapshot) => o.resources.map((r) => `${r.kind}/${r.metadata.name}`).sort();

test('given a cluster with no interest, when scoped, then the destinations defined and served elsewhere are left out', () => {
  const scoped = scopeOutput(outputOfC(), new Set());
  assert.deepEqual(names(scoped.output), []);
  assert.deepEqual(
    scoped.destinations.map((d) => [d.destination, d.reason]),
    [
      [RATINGS, 'none'],
      [REVIEWS, 'none'],
    ],
  );
});

test('given a lease on one host, when scoped, then exactly that destination’s ServiceEntry and DestinationRule stay', () => {
  const scoped = scopeOutput(outputOfC(), new Set(['reviews.global']));
  assert.deepEqual(names(scoped.output), ['DestinationRule/reviews-vd', 'ServiceEntry/reviews-vd']);
  assert.equal(scoped.destinations.find((d) => d.destination === REVIEWS)?.reason, 'lease');
});

test('given declared interest (backends here, or a route here names it), when scoped without leases, then it stays', () => {
  const route = virtualService('to-reviews', 'reviews.global', `RouteTable/bookinfo/rt@cluster-c,${REVIEWS}`);
  const scoped = scopeOutput(outputOfC([route], 'cluster-c'), new Set());
  assert.deepEqual(names(scoped.output), [
    'DestinationRule/ratings-vd',
    'DestinationRule/reviews-vd',
    'ServiceEntry/ratings-vd',
    'ServiceEntry/reviews-vd',
    'VirtualService/to-reviews',
  ]);
  const reasons = Object.fromEntries(scoped.destinations.map((d) => [d.destination, d.reason]));
  assert.deepEqual(reasons, { [RATINGS]: 'backends-here', [REVIEWS]: 'routed-here' });
});

test('given routes from a RouteTable defined elsewhere, when scoped, then a route to only uninteresting destinations goes and one that also names a held one stays', () => {
  const onlyRatings = virtualService('to-ratings', 'ratings.global', `RouteTable/bookinfo/rt@cluster-a,${RATINGS}`);
  const both = virtualService('to-both', 'reviews.global', `RouteTable/bookinfo/rt2@cluster-a,${RATINGS},${REVIEWS}`);
  const toService = virtualService(
    'to-service',
    'details.bookinfo.svc.cluster.local',
    'RouteTable/bookinfo/rt3@cluster-a',
  );
  const scoped = scopeOutput(outputOfC([onlyRatings, both, toService]), new Set(['reviews.global']));
  assert.deepEqual(names(scoped.output), [
    'DestinationRule/reviews-vd',
    'ServiceEntry/reviews-vd',
    'VirtualService/to-both',
    'VirtualService/to-service',
  ]);
  assert.equal(scoped.destinations.find((d) => d.destination === RATINGS)?.reason, 'none');
});

test('given a destination defined in the cluster itself, when scoped, then it stays', () => {
  const own = buildOutputSnapshot({
    cluster: 'cluster-a',
    provenance: [],
    resources: [serviceEntry('reviews-vd', 'reviews.global', REVIEWS, 'cluster-b')],
  });
  assert.equal(scopeOutput(own, new Set()).output, own);
});

test('given every destination held, when scoped, then the output is the unscoped one, unchanged', () => {
  const output = outputOfC();
  assert.equal(scopeOutput(output, new Set(['reviews.global', 'ratings.global'])).output, output);
});

test('given a scoper, when the same output and hosts come again, then the earlier result is reused; a new host redoes it', () => {
  const scoper = new OutputScoper();
  const output = outputOfC();
  const first = scoper.scope(output, new Set());
  assert.equal(scoper.scope(output, new Set()), first);
  const second = scoper.scope(output, new Set(['ratings.global']));
  assert.notEqual(second.output.hash, first.output.hash);
  assert.deepEqual(names(second.output), ['DestinationRule/ratings-vd', 'ServiceEntry/ratings-vd']);
});

test('given a change only to a destination the cluster is not interested in, when scoped, then its scoped hash is unchanged', () => {
  const before = scopeOutput(outputOfC(), new Set(['reviews.global']));
  const changedRatings = outputOfC([destinationRule('ratings-extra', 'ratings.global', RATINGS)]);
  const after = scopeOutput(changedRatings, new Set(['reviews.global']));
  assert.notEqual(changedRatings.hash, outputOfC().hash);
  assert.equal(after.output.hash, before.output.hash);
});

test('given a scoper, when only a left-out destination changes, then the scoped output keeps its content without scoping again', () => {
  const scoper = new OutputScoper();
  const base = outputOfC();
  const first = scoper.scope(base, new Set(['reviews.global']));
  // The unchanged outputs are the same objects, as the translator hands them back.
  const changed = buildOutputSnapshot({
    cluster: base.cluster,
    provenance: base.provenance,
    resources: [...base.resources, destinationRule('ratings-extra', 'ratings.global', RATINGS)],
  });
  assert.ok(base.resources.every((r) => changed.resources.includes(r)));
  const second = scoper.scope(changed, new Set(['reviews.global']));
  assert.equal(second.output.resources, first.output.resources, 'the same resources, not rebuilt');
  assert.equal(second.output.hash, first.output.hash);
});

test('given a scoper, when a left-out destination gains a backend in the cluster, then it is scoped again and kept', () => {
  const scoper = new OutputScoper();
  scoper.scope(outputOfC(), new Set());
  const backed = scoper.scope(outputOfC([], 'cluster-c'), new Set());
  assert.deepEqual(names(backed.output), ['DestinationRule/ratings-vd', 'ServiceEntry/ratings-vd']);
});
