import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildInputSnapshot,
  canonicalEncodingCount,
  canonicalJson,
  formatResourceKey,
  resourceEncoding,
  resourceKey,
  snapshotEncoding,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import {
  buildEastWestGateway,
  buildEndpointSlice,
  buildGloo,
  buildNode,
  buildPod,
  buildService,
} from '@meshrelay/testkit';
import {
  IncrementalTranslator,
  createIstioValidator,
  translate,
  type ProducedOutput,
  type TranslationInput,
  type TranslationResult,
} from '../src/index.ts';
import { CLUSTERS, ChangeWorld, seededRandom, workspaceResource } from './change-world.ts';
import { reviewsDestination } from './fixtures.ts';

const validator = createIstioValidator();
const SEED = 0x1c0ffee;
const STEPS = 400;

function securityText(outputs: ReadonlyMap<string, readonly ProducedOutput[]>): string {
  return canonicalJson(
    [...outputs]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([source, list]) => [source, list.map((o) => [o.cluster, o.resource])]),
  );
}

/**
 * Asserts the engine's result equals the full recompute's: outputs byte for byte, problems, statuses, security outputs.
 */
function assertSameResult(engine: TranslationResult, full: TranslationResult, context: string): void {
  assert.deepEqual([...engine.outputs.keys()], [...full.outputs.keys()], `${context}: output clusters`);
  for (const [cluster, expected] of full.outputs) {
    const actual = engine.outputs.get(cluster);
    assert.equal(actual?.hash, expected.hash, `${context}: hash of ${cluster}`);
    assert.equal(actual && snapshotEncoding(actual), snapshotEncoding(expected), `${context}: bytes of ${cluster}`);
    assert.equal(actual?.bytes, expected.bytes, `${context}: size of ${cluster}`);
    assert.deepEqual(actual?.provenance, expected.provenance, `${context}: provenance of ${cluster}`);
  }
  assert.deepEqual(engine.problems, full.problems, `${context}: problems`);
  assert.deepEqual(engine.statuses, full.statuses, `${context}: statuses`);
  assert.equal(
    securityText(engine.securityOutputs),
    securityText(full.securityOutputs),
    `${context}: security outputs`,
  );
}

/** `next`, with each resource equal in content to one of `previous` replaced by that (canonical) object. */
function keepUnchanged(previous: readonly Resource[], next: readonly Resource[]): Resource[] {
  const byKey = new Map(previous.map((r) => [formatResourceKey(resourceKey(r)), r]));
  return next.map((r) => {
    const kept = byKey.get(formatResourceKey(resourceKey(r)));
    return kept !== undefined && resourceEncoding(kept) === canonicalJson(r) ? kept : r;
  });
}

describe('IncrementalTranslator', () => {
  it('given a seeded random sequence of changes, when the engine runs after each, then its result equals a full translate() of the same inputs', async () => {
    const random = seededRandom(SEED);
    const world = new ChangeWorld(random);
    const engine = new IncrementalTranslator(validator);
    const snapshots = new Map<string, InputSnapshot>();
    let generation = 0;
    const rebuild = (cluster: string): void => {
      generation += 1;
      const before = snapshots.get(cluster);
      // Half the time as a delta does it: unchanged resources keep their objects from the snapshot before.
      const resources =
        before && random() < 0.5
          ? keepUnchanged(before.resources, world.resourcesOf(cluster))
          : world.resourcesOf(cluster);
      snapshots.set(cluster, buildInputSnapshot({ cluster, epoch: 'prop', generation, resources }));
    };
    for (const cluster of CLUSTERS) rebuild(cluster);
    let previous: TranslationResult | undefined;
    for (let step = 0; step < STEPS; step++) {
      const change = step === 0 ? { what: 'start', touched: [] } : world.change();
      for (const cluster of change.touched) rebuild(cluster);
      // Now and then every snapshot is rebuilt (new objects, same hashes), as after a reload from the store.
      if (random() < 0.05) for (const cluster of CLUSTERS) rebuild(cluster);
      const present = CLUSTERS.filter((c) => world.clusters.get(c)?.present);
      const input: TranslationInput = {
        inputs: new Map(present.map((c) => [c, snapshots.get(c) as InputSnapshot])),
        clusters: [...world.registry.values()],
        vips: new Map(world.vips),
        workspaces: world.workspaces,
        previousSecurityOutputs: previous?.securityOutputs ?? new Map(),
      };
      const context = `seed ${SEED.toString(16)} step ${step} (${change.what})`;
      try {
        const result = await engine.run(input);
        assertSameResult(result, translate(input, validator), context);
        previous = result;
      } catch (err) {
        process.stderr.write(`incremental translation property failed: ${context}\n`);
        throw err;
      }
    }
  });
});

/** The exportTo of the ServiceEntry of shop/svc-0-global in `cluster`'s output. */
function serviceEntryExport(result: TranslationResult, cluster: string): unknown {
  const se = result.outputs
    .get(cluster)
    ?.resources.find((r) => r.kind === 'ServiceEntry' && r.metadata.name === 'svc-0-global-vd');
  return (se?.spec as { exportTo?: unknown } | undefined)?.exportTo;
}

describe('IncrementalTranslator scoping', () => {
  it('given workspaces exporting VirtualDestinations by label, when a VirtualDestination in c1 loses the label, then consumers whose input did not change scope it again', async () => {
    const world = new ChangeWorld(seededRandom(7));
    world.workspaces = [
      workspaceResource('shop-team', [{ name: '*', namespaces: [{ name: 'shop' }] }]),
      workspaceResource('pay-team', [{ name: '*', namespaces: [{ name: 'pay' }] }]),
    ];
    world.gloo.set('WorkspaceSettings/shop/shop-team', {
      kind: 'WorkspaceSettings',
      cluster: 'c0',
      spec: {
        exportTo: [
          {
            workspaces: [{ name: 'pay-team' }],
            resources: [{ kind: 'VIRTUAL_DESTINATION', labels: { failover: 'on' } }],
          },
        ],
      },
    });
    world.gloo.set('WorkspaceSettings/pay/pay-team', {
      kind: 'WorkspaceSettings',
      cluster: 'c0',
      spec: { importFrom: [{ workspaces: [{ name: 'shop-team' }] }] },
    });
    const vd = world.gloo.get('VirtualDestination/shop/svc-0-global');
    assert.ok(vd);
    vd.cluster = 'c1';
    vd.labels = { failover: 'on' };
    const snapshots = new Map(
      CLUSTERS.map((c) => [
        c,
        buildInputSnapshot({ cluster: c, epoch: 'scope', generation: 1, resources: world.resourcesOf(c) }),
      ]),
    );
    const inputOf = (): TranslationInput => ({
      inputs: new Map(snapshots),
      clusters: [...world.registry.values()],
      vips: new Map(world.vips),
      workspaces: world.workspaces,
    });
    const engine = new IncrementalTranslator(validator);
    const before = await engine.run(inputOf());
    assert.deepEqual(serviceEntryExport(before, 'c2'), ['pay', 'shop']);

    vd.labels = {};
    snapshots.set(
      'c1',
      buildInputSnapshot({ cluster: 'c1', epoch: 'scope', generation: 2, resources: world.resourcesOf('c1') }),
    );
    const after = await engine.run(inputOf());

    assert.deepEqual(serviceEntryExport(after, 'c2'), ['shop']);
    assertSameResult(after, translate(inputOf(), validator), 'label removed');
  });
});

function serviceIn(c: string, name: string, ips: readonly string[]): Resource[] {
  const node = `node-${c}`;
  return [
    buildService({
      name,
      namespace: 'bookinfo',
      ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
      selector: { app: name },
      labels: { app: name },
    }),
    buildEndpointSlice({
      service: name,
      namespace: 'bookinfo',
      ports: [{ name: 'http', port: 9080 }],
      endpoints: ips.map((ip, i) => ({ ip, pod: `${name}-${c}-${i}`, node })),
    }),
    ...ips.map((ip, i) =>
      buildPod({
        name: `${name}-${c}-${i}`,
        namespace: 'bookinfo',
        ip,
        node,
        labels: { app: name },
        serviceAccount: name,
      }),
    ),
  ];
}

describe('IncrementalTranslator reuse', () => {
  const gateways = { a: '203.0.113.10', b: '203.0.113.20', c: '203.0.113.30' } as const;
  const clusterResources = (c: 'a' | 'b' | 'c', reviews: readonly string[], ratings: readonly string[]): Resource[] => [
    buildNode({ name: `node-${c}`, region: `region-${c}`, zone: `zone-${c}` }),
    buildEastWestGateway({ address: gateways[c] }),
    ...serviceIn(c, 'reviews', reviews),
    ...serviceIn(c, 'ratings', ratings),
    ...(c === 'a' ? [reviewsDestination()] : []),
  ];
  const snapshotOf = (c: 'a' | 'b' | 'c', reviews: readonly string[], ratings: readonly string[]): InputSnapshot =>
    buildInputSnapshot({
      cluster: `cluster-${c}`,
      epoch: 'reuse',
      generation: 1,
      resources: clusterResources(c, reviews, ratings),
    });
  const start = (): Map<string, InputSnapshot> =>
    new Map([
      ['cluster-a', snapshotOf('a', ['10.1.0.1', '10.1.0.2'], ['10.1.1.1'])],
      ['cluster-b', snapshotOf('b', ['10.2.0.1', '10.2.0.2'], ['10.2.1.1'])],
      ['cluster-c', snapshotOf('c', ['10.3.0.1'], ['10.3.1.1'])],
    ]);
  const inputOf = (inputs: Map<string, InputSnapshot>): TranslationInput => ({
    inputs,
    clusters: [],
    vips: new Map([['bookinfo/reviews-global', '10.30.0.7']]),
  });

  it('given an engine that translated three clusters, when an endpoint no output depends on changes, then every output keeps its resources and nothing is re-encoded', async () => {
    const engine = new IncrementalTranslator(validator);
    const inputs = start();
    const before = await engine.run(inputOf(inputs));
    inputs.set('cluster-b', snapshotOf('b', ['10.2.0.1', '10.2.0.2'], ['10.2.1.9']));
    const encodings = canonicalEncodingCount();
    const after = await engine.run(inputOf(inputs));
    assert.equal(canonicalEncodingCount() - encodings, 0);
    for (const [cluster, output] of before.outputs) {
      assert.equal(after.outputs.get(cluster)?.resources, output.resources, cluster);
      assert.equal(after.outputs.get(cluster)?.hash, output.hash, cluster);
    }
  });

  it('given an engine that translated three clusters, when an endpoint no output depends on changes, then every resource keeps its status object; when an output changes, its resource gets a new one', async () => {
    const engine = new IncrementalTranslator(validator);
    const inputs = start();
    const before = await engine.run(inputOf(inputs));
    assert.deepEqual(
      before.statuses.map((s) => s.kind),
      ['VirtualDestination'],
    );
    inputs.set('cluster-b', snapshotOf('b', ['10.2.0.1', '10.2.0.2'], ['10.2.1.9']));
    const quiet = await engine.run(inputOf(inputs));
    assert.equal(quiet.statuses[0], before.statuses[0]);
    assert.ok(Object.isFrozen(quiet.statuses[0]));
    // The reviews endpoint in cluster-b: cluster-b's ServiceEntry of the VirtualDestination is a new output.
    inputs.set('cluster-b', snapshotOf('b', ['10.2.0.1', '10.2.0.9'], ['10.2.1.9']));
    const changed = await engine.run(inputOf(inputs));
    assert.notEqual(changed.statuses[0], before.statuses[0]);
    assert.deepEqual(changed.statuses, translate(inputOf(inputs), validator).statuses);
  });

  it('given an engine that translated three clusters, when the same inputs are translated again, then every output snapshot is the same object', async () => {
    const engine = new IncrementalTranslator(validator);
    const input = inputOf(start());
    const before = await engine.run(input);
    const after = await engine.run(input);
    for (const [cluster, output] of before.outputs) assert.equal(after.outputs.get(cluster), output, cluster);
  });

  it('given an engine that translated three clusters, when one endpoint of an exported Service changes in cluster-b, then only cluster-b output changes and only its ServiceEntry is re-encoded', async () => {
    const engine = new IncrementalTranslator(validator);
    const inputs = start();
    const before = await engine.run(inputOf(inputs));
    inputs.set('cluster-b', snapshotOf('b', ['10.2.0.1', '10.2.0.9'], ['10.2.1.1']));
    const encodings = canonicalEncodingCount();
    const after = await engine.run(inputOf(inputs));
    // The ServiceEntry's canonical copy and its annotated copy; the other clusters reach cluster-b through its gateway
    // (unchanged weight).
    assert.equal(canonicalEncodingCount() - encodings, 2);
    assert.equal(after.outputs.get('cluster-a')?.resources, before.outputs.get('cluster-a')?.resources);
    assert.equal(after.outputs.get('cluster-c')?.resources, before.outputs.get('cluster-c')?.resources);
    assert.notEqual(after.outputs.get('cluster-b')?.hash, before.outputs.get('cluster-b')?.hash);
    const changed = (after.outputs.get('cluster-b')?.resources ?? []).filter(
      (r) => !before.outputs.get('cluster-b')?.resources.includes(r),
    );
    assert.deepEqual(
      changed.map((r) => r.kind),
      ['ServiceEntry'],
    );
  });

  it('given an engine that translated three clusters, when endpoints change in cluster-b, then each consumer lists only its own endpoints directly and every output encodes exactly its content', async () => {
    const engine = new IncrementalTranslator(validator);
    const inputs = start();
    await engine.run(inputOf(inputs));
    inputs.set('cluster-b', snapshotOf('b', ['10.2.0.1', '10.2.0.9', '10.2.0.7'], ['10.2.1.1']));
    const after = await engine.run(inputOf(inputs));
    const addresses = (cluster: string): string[] => {
      const se = after.outputs.get(cluster)?.resources.find((r) => r.kind === 'ServiceEntry');
      return ((se?.spec as { endpoints: { address: string }[] }).endpoints ?? []).map((e) => e.address);
    };
    // Endpoint groups are shared by the consumers: a group built for one consumer must not show up in another's view.
    assert.deepEqual(addresses('cluster-a'), ['10.1.0.1', '10.1.0.2', gateways.b, gateways.c]);
    assert.deepEqual(addresses('cluster-b'), [gateways.a, '10.2.0.1', '10.2.0.7', '10.2.0.9', gateways.c]);
    assert.deepEqual(addresses('cluster-c'), [gateways.a, gateways.b, '10.3.0.1']);
    for (const [cluster, output] of after.outputs) {
      // A plain copy shares no object (and no remembered encoding) with the output.
      const plain = JSON.parse(JSON.stringify(output.resources)) as unknown;
      assert.equal(snapshotEncoding(output), canonicalJson(plain), cluster);
    }
  });

  it('given two AccessPolicies whose outputs share a name in cluster-a, when an endpoint changes only in cluster-b, then cluster-a still reports the duplicate as a full translation does', async () => {
    // "p" in shop on bookinfo/reviews and "p-shop" in bookinfo on the same Service both name their output
    // p-shop-reviews-ap.
    const policy = (name: string, namespace: string): Resource =>
      buildGloo('AccessPolicy', {
        name,
        namespace,
        spec: {
          applyToDestinations: [{ kind: 'SERVICE', selector: { name: 'reviews', namespace: 'bookinfo' } }],
          config: { authz: { allowedClients: [{ serviceAccountSelector: { name: 'ratings' } }] } },
        },
      });
    const withPolicies = (c: 'a' | 'b', reviews: readonly string[]): InputSnapshot =>
      buildInputSnapshot({
        cluster: `cluster-${c}`,
        epoch: 'reuse',
        generation: 1,
        resources: [
          ...clusterResources(c, reviews, ['10.9.1.1']),
          ...(c === 'a' ? [policy('p', 'shop'), policy('p-shop', 'bookinfo')] : []),
        ],
      });
    const inputs = new Map([
      ['cluster-a', withPolicies('a', ['10.1.0.1'])],
      ['cluster-b', withPolicies('b', ['10.2.0.1'])],
    ]);
    const engine = new IncrementalTranslator(validator);
    const first = await engine.run(inputOf(inputs));
    assert.ok(
      first.problems.some((p) => /two sources produce an output/.test(p.reason)),
      JSON.stringify(first.problems),
    );
    inputs.set('cluster-b', withPolicies('b', ['10.2.0.9']));
    const input = inputOf(inputs);
    assertSameResult(await engine.run(input), translate(input, validator), 'endpoint changed in cluster-b');
  });
});
