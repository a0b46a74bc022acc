// The whole-path change kinds of the tier bench: what each changes in a cluster's input and in the
// outputs translated from it, which clusters run real agents, and which changes target them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KINDS, buildInputSnapshot, type Resource } from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { applyKindChange, changeTargets, kindChange, realAgentIndexes } from '../tier/change-kinds.ts';
import { loadGeneratorChangeIndexes } from '../tier/endpoint-change.ts';
import { TIER_S, generateWorkload } from '../workload.ts';

const shape = { ...TIER_S, clusters: 3, servicesPerCluster: 20, endpointsPerService: 2 };

type Slice = Resource & { endpoints: Array<{ addresses: string[]; conditions: { ready: boolean } }> };
const sliceOf = (resources: readonly Resource[], service: string): Slice =>
  resources.find(
    (r) => r.kind === KINDS.EndpointSlice.kind && r.metadata.labels?.['kubernetes.io/service-name'] === service,
  ) as Slice;

/** Clusters whose translated output changes when `change` is applied to its cluster's input. */
function changedOutputs(change: ReturnType<typeof kindChange>): string[] {
  const workload = generateWorkload(shape);
  const validator = createIstioValidator();
  const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  const before = translate({ inputs: workload.inputs, clusters: workload.clusters, vips }, validator);
  const inputs = new Map(workload.inputs);
  const input = inputs.get(change.cluster);
  assert.ok(input);
  inputs.set(
    change.cluster,
    buildInputSnapshot({
      cluster: input.cluster,
      epoch: input.epoch,
      generation: input.generation + 1,
      resources: applyKindChange(input.resources, change),
    }),
  );
  const after = translate({ inputs, clusters: workload.clusters, vips }, validator);
  return [...after.outputs]
    .filter(([c, o]) => before.outputs.get(c)?.hash !== o.hash)
    .map(([c]) => c)
    .sort();
}

test("given an address change of an exported service, when translated, then only its owner's output changes", () => {
  const change = kindChange(shape, 'address', 1, [0, 1, 2]);
  assert.deepEqual([change.cluster, change.service, change.address], ['cluster-1', 'svc-000', '10.98.0.2']);
  assert.deepEqual(changedOutputs(change), ['cluster-1']);
});

test("given a readiness flip of an exported service, when translated, then every cluster's output changes", () => {
  const change = kindChange(shape, 'readiness', 0, [2, 1]);
  assert.deepEqual([change.cluster, change.service, change.ready], ['cluster-2', 'svc-000', false]);
  assert.deepEqual(changedOutputs(change), ['cluster-0', 'cluster-1', 'cluster-2']);
});

test('given readiness changes in a row, when applied in turn, then they go in unready/ready pairs on one endpoint and leave it ready', () => {
  const targets = [0, 1];
  let resources = generateWorkload(shape).inputs.get('cluster-0')?.resources ?? [];
  const first = kindChange(shape, 'readiness', 0, targets);
  const second = kindChange(shape, 'readiness', 1, targets);
  assert.deepEqual(
    [first.cluster, first.service, second.cluster, second.service],
    ['cluster-0', 'svc-000', 'cluster-0', 'svc-000'],
  );
  resources = applyKindChange(resources, first);
  assert.equal(sliceOf(resources, 'svc-000').endpoints[0]?.conditions.ready, false);
  resources = applyKindChange(resources, second);
  assert.equal(sliceOf(resources, 'svc-000').endpoints[0]?.conditions.ready, true);
  assert.equal(
    kindChange(shape, 'readiness', 2, targets).cluster,
    'cluster-1',
    'the next pair targets the next cluster',
  );
});

test('given a fleet, when real agents are picked, then they spread from the first cluster to the last and the changes alternate real and relay-client clusters', () => {
  assert.deepEqual(realAgentIndexes(50, 3), [0, 25, 49]);
  assert.deepEqual(realAgentIndexes(3, 2), [0, 2]);
  assert.deepEqual(realAgentIndexes(3, 0), []);
  assert.deepEqual(changeTargets(50, [0, 25, 49]), [0, 1, 25, 2, 49, 3]);
  assert.deepEqual(changeTargets(3, []), [0]);
});

test('given real-agent clusters, when the one-endpoint changes are chosen, then none targets them, and none is chosen when every cluster runs one', () => {
  const indexes = loadGeneratorChangeIndexes(shape, 4, new Set(['cluster-0', 'cluster-2']));
  assert.deepEqual(indexes, [1, 4, 7, 10]);
  assert.deepEqual(loadGeneratorChangeIndexes(shape, 4, new Set(['cluster-0', 'cluster-1', 'cluster-2'])), []);
});

test('given a service without an EndpointSlice, when changed, then the error names the cluster and the service', () => {
  const change = { kind: 'readiness' as const, index: 0, cluster: 'cluster-0', service: 'svc-999', ready: false };
  assert.throws(() => applyKindChange([], change), /cluster-0 has no EndpointSlice endpoint for svc-999/);
});
