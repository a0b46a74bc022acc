import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalResource, type Resource } from '@meshrelay/api';
import { RunMemo } from '../src/engine/translation-memo.ts';

const serviceEntry = (address: string): Resource =>
  ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'svc', namespace: 'ns' },
    spec: { hosts: ['svc.global'], endpoints: [{ address }] },
  }) as unknown as Resource;
const provenance = [{ cluster: 'c1', inputHash: 'a'.repeat(64) }];

test('given an output built for a cluster, when the next run rebuilds its resources with the same content as new objects, then the output is the one built before (not encoded and hashed again)', () => {
  const memo = new RunMemo();
  const first = memo.snapshot('c1', [canonicalResource(serviceEntry('10.0.0.1'))], provenance);
  memo.turn();
  const again = memo.snapshot('c1', [canonicalResource(serviceEntry('10.0.0.1'))], provenance);
  assert.equal(again, first);
});

test('given an output built for a cluster, when the next run rebuilds a resource with other content, then a new output with another hash is built', () => {
  const memo = new RunMemo();
  const first = memo.snapshot('c1', [canonicalResource(serviceEntry('10.0.0.1'))], provenance);
  memo.turn();
  const changed = memo.snapshot('c1', [canonicalResource(serviceEntry('10.0.0.2'))], provenance);
  assert.notEqual(changed.hash, first.hash);
  assert.equal(
    (changed.resources[0] as { spec: { endpoints: { address: string }[] } }).spec.endpoints[0]?.address,
    '10.0.0.2',
  );
});
