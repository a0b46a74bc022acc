import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildInputSnapshot,
  buildOutputSnapshot,
  canonicalJson,
  MeshrelayError,
  normalizeResource,
  type Resource,
} from '../src/index.ts';

const svc = (name: string, extra: Record<string, unknown> = {}): Resource => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { ports: [{ port: 80 }], ...extra },
});

test('canonicalJson sorts keys at every depth and drops undefined', () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: undefined }], c: 'x' } }),
    '{"a":{"c":"x","d":[3,{"z":1}]},"b":1}',
  );
});

test('canonicalJson refuses values JSON cannot carry', () => {
  assert.throws(
    () => canonicalJson({ n: Number.NaN }),
    (e: unknown) => e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_INVALID_RESOURCE',
  );
});

test('given the same resources in any order, when built, then the hash is equal', () => {
  const a = buildInputSnapshot({ cluster: 'a', epoch: 'e', generation: 1, resources: [svc('x'), svc('y')] });
  const b = buildInputSnapshot({ cluster: 'a', epoch: 'e', generation: 2, resources: [svc('y'), svc('x')] });
  assert.equal(a.hash, b.hash);
  assert.match(a.hash, /^[0-9a-f]{64}$/);
  assert.deepEqual(
    a.resources.map((r) => r.metadata.name),
    ['x', 'y'],
  );
});

test('given different content, when built, then the hash differs', () => {
  const a = buildInputSnapshot({ cluster: 'a', epoch: 'e', generation: 1, resources: [svc('x')] });
  const b = buildInputSnapshot({
    cluster: 'a',
    epoch: 'e',
    generation: 1,
    resources: [svc('x', { type: 'NodePort' })],
  });
  assert.notEqual(a.hash, b.hash);
});

test('a built snapshot is frozen and does not alias its input', () => {
  const input = svc('x');
  const snap = buildInputSnapshot({ cluster: 'a', epoch: 'e', generation: 1, resources: [input] });
  assert.ok(Object.isFrozen(snap.resources[0]));
  assert.notEqual(snap.resources[0], input);
  assert.throws(() => {
    (snap.resources as Resource[]).push(svc('y'));
  }, TypeError);
});

test('duplicate resources are refused with a code naming the resource', () => {
  assert.throws(
    () => buildInputSnapshot({ cluster: 'a', epoch: 'e', generation: 1, resources: [svc('x'), svc('x')] }),
    (e: unknown) =>
      e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_INVALID_RESOURCE' && e.message.includes('default/x'),
  );
});

test('output provenance is sorted by cluster and not part of the hash', () => {
  const a = buildOutputSnapshot({
    cluster: 'a',
    resources: [svc('x')],
    provenance: [
      { cluster: 'b', inputHash: '2' },
      { cluster: 'a', inputHash: '1' },
    ],
  });
  const b = buildOutputSnapshot({ cluster: 'a', resources: [svc('x')], provenance: [] });
  assert.deepEqual(
    a.provenance.map((p) => p.cluster),
    ['a', 'b'],
  );
  assert.equal(a.hash, b.hash);
});

test('normalizeResource keeps the pod identity and drops volatile fields', () => {
  const pod = normalizeResource({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      namespace: 'ns',
      labels: { app: 'x' },
      resourceVersion: '7',
      uid: 'u',
    } as Resource['metadata'],
    spec: { serviceAccountName: 'sa', nodeName: 'n1', containers: [{ name: 'c' }] },
    status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready' }] },
  });
  assert.deepEqual(pod, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ns', labels: { app: 'x' } },
    spec: { serviceAccountName: 'sa', nodeName: 'n1' },
    status: { phase: 'Running', podIP: '10.0.0.1' },
  });
});
