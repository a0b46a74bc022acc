import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KINDS, MeshrelayError, type Resource } from '@meshrelay/api';
import { applyEndpointChange, endpointChange } from '../tier/endpoint-change.ts';
import { MAX_CLUSTERS, TIER_S, generateClusterInput, generateWorkload, tierS } from '../workload.ts';

const podIps = (resources: readonly Resource[]): string[] =>
  resources
    .filter((r) => r.kind === KINDS.Pod.kind)
    .map((r) => (r as Resource & { status: { podIP: string } }).status.podIP);

test('given tier S, when generated, then its input digest is the one published before the address plan grew', () => {
  assert.equal(tierS().counts.inputDigest, '5e58c85b6659e7825ce8a5fa1a2d940d68178bce357f7a05cb1103c77fe59f0c');
});

test('given as many clusters as the address plan allows, when generated, then every pod address is unique and the first 155 clusters keep 10.(100+c)', () => {
  const workload = generateWorkload({
    ...TIER_S,
    clusters: MAX_CLUSTERS,
    servicesPerCluster: 2,
    endpointsPerService: 1,
    nodesPerCluster: 1,
  });
  const ips = [...workload.inputs.values()].flatMap((s) => podIps(s.resources));
  assert.equal(new Set(ips).size, ips.length);
  assert.ok(podIps(workload.inputs.get('cluster-154')?.resources ?? []).every((ip) => ip.startsWith('10.254.')));
  assert.ok(podIps(workload.inputs.get('cluster-218')?.resources ?? []).every((ip) => ip.startsWith('100.127.')));
});

test('given more clusters than the address plan allows, when generated, then MESHRELAY_ERR_INVALID_CONFIG names the limit', () => {
  assert.throws(
    () => generateWorkload({ ...TIER_S, clusters: MAX_CLUSTERS + 1 }),
    (err: unknown) =>
      err instanceof MeshrelayError &&
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      err.message.includes(`${MAX_CLUSTERS} clusters`),
  );
});

test('given an endpoint change, when applied to its cluster, then the EndpointSlice entry and its Pod carry the new address and nothing else changes', () => {
  const shape = { ...TIER_S, clusters: 2, servicesPerCluster: 20 };
  const change = endpointChange(shape, 3);
  assert.deepEqual(
    { cluster: change.cluster, service: change.service, address: change.address },
    { cluster: 'cluster-1', service: 'svc-010', address: '10.99.0.4' },
  );
  const before = generateClusterInput(shape, 1).resources;
  const after = applyEndpointChange(before, change);
  const changed = after.filter((r, i) => r !== before[i]);
  assert.deepEqual(changed.map((r) => r.kind).sort(), ['EndpointSlice', 'Pod']);
  for (const r of changed) assert.ok(JSON.stringify(r).includes('"10.99.0.4"'), `${r.kind} carries the new address`);
  assert.equal(podIps(after).filter((ip) => ip === '10.99.0.4').length, 1);
});
