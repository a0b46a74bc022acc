import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { DEFAULT_TRUST_DOMAIN, trustDomainOf, workloadIdentitiesOf } from '../src/trust/identities.ts';

const TIMEOUT = { timeout: 30_000 };

function pod(namespace: string, name: string, serviceAccountName?: string): Resource {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: serviceAccountName === undefined ? {} : { serviceAccountName },
  } as Resource;
}

function meshConfig(name: string, mesh: string): Resource {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'istio-system' },
    data: { mesh },
  } as Resource;
}

test('identities: each Pod ServiceAccount once, `default` for a Pod naming none, sorted', TIMEOUT, () => {
  const ids = workloadIdentitiesOf([
    pod('shop', 'web-2', 'web'),
    pod('bookinfo', 'reviews-1', 'reviews'),
    pod('shop', 'web-1', 'web'),
    pod('shop', 'cron-1'),
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' } } as Resource,
  ]);
  assert.deepEqual(ids, [
    { namespace: 'bookinfo', serviceAccount: 'reviews' },
    { namespace: 'shop', serviceAccount: 'default' },
    { namespace: 'shop', serviceAccount: 'web' },
  ]);
});

test("trust domain: the mesh config's, `istio` before a revision's, else cluster.local", TIMEOUT, () => {
  assert.equal(trustDomainOf([]), DEFAULT_TRUST_DOMAIN);
  assert.equal(trustDomainOf([meshConfig('istio', 'trustDomain: east.example\n')]), 'east.example');
  assert.equal(
    trustDomainOf([
      meshConfig('istio-canary', 'trustDomain: canary.example\n'),
      meshConfig('istio', 'trustDomain: east.example\n'),
    ]),
    'east.example',
  );
  assert.equal(trustDomainOf([meshConfig('istio', 'accessLogFile: /dev/stdout\n')]), DEFAULT_TRUST_DOMAIN);
  assert.equal(trustDomainOf([meshConfig('istio', 'trustDomain: [not, a, name]\n')]), DEFAULT_TRUST_DOMAIN);
});
