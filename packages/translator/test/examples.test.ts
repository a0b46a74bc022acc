import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  allocateVips,
  createIstioValidator,
  translate,
  validateInputResources,
  virtualDestinationKeys,
} from '../src/index.ts';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { Resource } from '@meshrelay/api';
import { EXAMPLES, readManifestDir, snapshotsOf } from './support.ts';

const WORKSPACES = parseAllDocuments(readFileSync(join(EXAMPLES, 'workspaces.yaml'), 'utf8')).map(
  (d) => d.toJS() as Resource,
);

describe('examples/cluster-a and examples/cluster-b', () => {
  const perCluster = new Map(['cluster-a', 'cluster-b'].map((name) => [name, readManifestDir(join(EXAMPLES, name))]));

  it('given the example manifests, when validated as inputs, then every resource is valid', () => {
    for (const [cluster, resources] of perCluster) {
      assert.deepEqual(validateInputResources(resources).rejected, [], cluster);
      assert.ok(resources.length > 5, cluster);
    }
  });

  it('given the example clusters and workspaces, when translated, then every Gloo resource is ACCEPTED with zero problems and every output is valid', () => {
    const inputs = snapshotsOf(perCluster);
    const vips = allocateVips(new Map(), virtualDestinationKeys(inputs));
    const validator = createIstioValidator();
    const result = translate(
      { inputs, clusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }], vips, workspaces: WORKSPACES },
      validator,
    );
    assert.deepEqual(result.problems, []);
    assert.deepEqual(
      result.statuses.filter((s) => s.state.approval !== 'ACCEPTED'),
      [],
    );
    assert.equal(result.statuses.length, 11);
    const names = (cluster: string): string[] =>
      (result.outputs.get(cluster)?.resources ?? [])
        .map((r) => `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`)
        .sort();
    const bookinfo = [
      'AuthorizationPolicy/bookinfo/reviews-access-reviews-ap',
      'DestinationRule/bookinfo/reviews-global-vd',
      'PeerAuthentication/bookinfo/reviews-access-reviews-ap',
      'ServiceEntry/bookinfo/reviews-global-vd',
      'VirtualService/bookinfo/reviews-routes-rt',
    ];
    assert.deepEqual(names('cluster-a'), bookinfo);
    assert.deepEqual(names('cluster-b'), [...bookinfo, 'VirtualService/web/storefront-rt'].sort());
    for (const output of result.outputs.values()) {
      for (const r of output.resources) assert.deepEqual(validator.validate(r), [], `${output.cluster} ${r.kind}`);
    }
  });

  it('given the example route with a header match, when translated, then jason goes to the v3 subset that the DestinationRule defines', () => {
    const result = translate(
      { inputs: snapshotsOf(perCluster), clusters: [], vips: new Map(), workspaces: WORKSPACES },
      createIstioValidator(),
    );
    const resources = result.outputs.get('cluster-a')?.resources ?? [];
    const vs = resources.find((r) => r.kind === 'VirtualService');
    const http = (vs?.spec as { http: { name: string; route: { destination: { subset?: string } }[] }[] }).http;
    assert.equal(http[0]?.name, 'reviews-jason');
    assert.equal(http[0]?.route[0]?.destination.subset, 'version-v3');
    const dr = resources.find((r) => r.kind === 'DestinationRule');
    assert.deepEqual((dr?.spec as { subsets: unknown[] }).subsets, [{ name: 'version-v3', labels: { version: 'v3' } }]);
  });

  it('given the example clusters, when translated, then cluster-a reaches cluster-b through its east-west gateway', () => {
    const result = translate(
      { inputs: snapshotsOf(perCluster), clusters: [], vips: new Map() },
      createIstioValidator(),
    );
    const se = result.outputs.get('cluster-a')?.resources.find((r) => r.kind === 'ServiceEntry');
    const endpoints = (se?.spec as { endpoints: { address: string; locality: string }[] }).endpoints;
    assert.deepEqual(
      endpoints.map((e) => `${e.address} ${e.locality}`),
      [
        '10.1.1.11 us-east/us-east-1a',
        '10.1.2.12 us-east/us-east-1b',
        '203.0.113.20 us-west/us-west-2a',
        '203.0.113.20 us-west/us-west-2b',
      ],
    );
  });
});
