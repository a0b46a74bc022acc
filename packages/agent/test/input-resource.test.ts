import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateInputResource } from '@meshrelay/translator';
import { toInputResource } from '../src/discovery/input-resource.ts';

test('given a Namespace manifest, when converted, then it is skipped quietly: no resource and no problem', () => {
  const result = toInputResource(
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bookinfo' } },
    validateInputResource,
  );
  assert.deepEqual(result, { problems: [] });
});

test('given a ConfigMap manifest, when converted, then it is skipped quietly', () => {
  const result = toInputResource(
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'bookinfo' }, data: { a: 'b' } },
    validateInputResource,
  );
  assert.deepEqual(result, { problems: [] });
});

test('given an AccessPolicy with an unknown spec field, when converted, then it still goes up so the plane reports it INVALID', () => {
  const policy = {
    apiVersion: 'security.policy.gloo.solo.io/v2',
    kind: 'AccessPolicy',
    metadata: { name: 'reviews', namespace: 'bookinfo' },
    spec: { config: { authz: { allowedHosts: ['x'] } } },
  };
  assert.ok(validateInputResource(policy).length > 0);
  const result = toInputResource(policy, validateInputResource);
  assert.ok('resource' in result);
  assert.equal(result.resource.metadata.name, 'reviews');
});

test('given a Gloo kind Meshrelay does not support, when converted, then it still goes up', () => {
  const result = toInputResource(
    {
      apiVersion: 'security.policy.gloo.solo.io/v2',
      kind: 'WAFPolicy',
      metadata: { name: 'waf', namespace: 'bookinfo' },
      spec: {},
    },
    validateInputResource,
  );
  assert.ok('resource' in result);
});

test('given a Gloo resource with an invalid name, when converted, then it is refused with the field named', () => {
  const result = toInputResource(
    {
      apiVersion: 'networking.gloo.solo.io/v2',
      kind: 'RouteTable',
      metadata: { name: 'Bad_Name', namespace: 'bookinfo' },
      spec: {},
    },
    validateInputResource,
  );
  assert.ok('problems' in result);
  assert.equal(result.problems[0]?.path, 'metadata.name');
});

test('given a Service with a port above 65535, when converted, then it is refused with the field named', () => {
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'r', namespace: 'b' },
    spec: { ports: [{ port: 70000 }] },
  };
  const result = toInputResource(service, validateInputResource);
  assert.ok('problems' in result);
  assert.equal(result.problems[0]?.path, 'spec.ports[0].port');
});

test('given Istio mesh config ConfigMap in istio-system, when converted, then it goes up (its trust domain is read)', () => {
  const result = toInputResource(
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio', namespace: 'istio-system' },
      data: { mesh: 'trustDomain: x' },
    },
    validateInputResource,
  );
  assert.ok('resource' in result);
});
