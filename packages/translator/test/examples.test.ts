import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { allocateVips, createIstioValidator, translate, validateInputResources, virtualDestinationKeys } from '../src/index.ts';
import { EXAMPLES, readManifestDir, snapshotsOf } from './support.ts';

describe('examples/cluster-a and examples/cluster-b', () => {
  const perCluster = new Map(['cluster-a', 'cluster-b'].map((name) => [name, readManifestDir(join(EXAMPLES, name))]));

  it('given the example manifests, when validated as inputs, then every resource is valid', () => {
    for (const [cluster, resources] of perCluster) {
      assert.deepEqual(validateInputResources(resources).rejected, [], cluster);
      assert.ok(resources.length > 5, cluster);
    }
  });

  it('given the example clusters, when translated, then both get valid outputs with zero problems', () => {
    const inputs = snapshotsOf(perCluster);
    const vips = allocateVips(new Map(), virtualDestinationKeys(inputs));
    const validator = createIstioValidator();
    const result = translate({ inputs, clusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }], vips }, validator);
    assert.deepEqual(result.problems, []);
    assert.deepEqual([...result.outputs.keys()].sort(), ['cluster-a', 'cluster-b']);
    for (const output of result.outputs.values()) {
      assert.deepEqual(output.resources.map((r) => `${r.kind}/${r.metadata.name}`).sort(), [
        'AuthorizationPolicy/reviews-access-reviews-ap',
        'DestinationRule/reviews-global-vd',
        'ServiceEntry/reviews-global-vd',
        'VirtualService/reviews-routes-rt',
      ]);
      for (const r of output.resources) assert.deepEqual(validator.validate(r), [], `${output.cluster} ${r.kind}`);
    }
  });

  it('given the example clusters, when translated, then cluster-a reaches cluster-b through its east-west gateway', () => {
    const result = translate({ inputs: snapshotsOf(perCluster), clusters: [], vips: new Map() }, createIstioValidator());
    const se = result.outputs.get('cluster-a')?.resources.find((r) => r.kind === 'ServiceEntry');
    const endpoints = (se?.spec as { endpoints: { address: string; locality: string }[] }).endpoints;
    assert.deepEqual(endpoints.map((e) => `${e.address} ${e.locality}`), [
      '10.1.1.11 us-east/us-east-1a',
      '10.1.2.12 us-east/us-east-1b',
      '203.0.113.20 us-west/us-west-2a',
      '203.0.113.20 us-west/us-west-2b',
    ]);
  });
});
