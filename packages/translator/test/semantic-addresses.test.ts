// Round-robin, closest and instance addresses: equal in every cluster's output, stable across
// re-translation and an instance moving to another cluster, from the pool of their kind.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Resource } from '@meshrelay/api';
import {
  buildEastWestGateway,
  buildEndpointSlice,
  buildNode,
  buildPod,
  buildService,
  buildTestInputSnapshot,
  buildVirtualDestination,
} from '@meshrelay/testkit';
import {
  IncrementalTranslator,
  allocateVips,
  checkVipPools,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
  type TranslationResult,
} from '../src/index.ts';

const validator = createIstioValidator();

/** The db Service in one cluster with one Pod per instance id (`ip` per id). */
function dbIn(cluster: 'a' | 'b', instances: Readonly<Record<string, string>>): Resource[] {
  const node = `node-${cluster}`;
  const ids = Object.keys(instances).sort();
  return [
    buildNode({ name: node, region: cluster === 'a' ? 'us-east' : 'us-west', zone: `zone-${cluster}` }),
    buildService({ name: 'db', namespace: 'shop', ports: [{ name: 'grpc', port: 7000 }], selector: { app: 'db' } }),
    buildEndpointSlice({
      service: 'db',
      namespace: 'shop',
      ports: [{ name: 'grpc', port: 7000 }],
      endpoints: ids.map((id) => ({ ip: instances[id] as string, pod: id, node })),
    }),
    ...ids.map((id) =>
      buildPod({
        name: id,
        namespace: 'shop',
        ip: instances[id] as string,
        node,
        labels: { app: 'db', 'meshrelay.io/instance': id },
      }),
    ),
  ];
}

/** Both kinds of semantic address asked for. */
const ALL_ON: Readonly<Record<string, string>> = {
  'meshrelay.io/policy-addresses': 'true',
  'meshrelay.io/instance-addresses': 'true',
};

function dbDestination(annotations: Readonly<Record<string, string>>): Resource {
  const vd = buildVirtualDestination({
    name: 'db',
    namespace: 'shop',
    hosts: ['db.global'],
    services: [{ name: 'db', namespace: 'shop' }],
    ports: [{ number: 7000, protocol: 'GRPC' }],
  });
  if (Object.keys(annotations).length === 0) return vd;
  return { ...vd, metadata: { ...vd.metadata, annotations: { ...annotations } } };
}

function mesh(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
  annotations = ALL_ON,
): Map<string, Resource[]> {
  return new Map([
    ['cluster-a', [...dbIn('a', a), buildEastWestGateway({ address: '203.0.113.10' }), dbDestination(annotations)]],
    ['cluster-b', [...dbIn('b', b), buildEastWestGateway({ address: '203.0.113.20' })]],
  ]);
}

function run(
  perCluster: Map<string, Resource[]>,
  existing: ReadonlyMap<string, string> = new Map(),
): { vips: Map<string, string>; result: TranslationResult } {
  const inputs = new Map([...perCluster].map(([c, resources]) => [c, buildTestInputSnapshot(c, resources)]));
  const vips = allocateVips(existing, virtualDestinationKeys(inputs));
  const result = translate({ inputs, clusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }], vips }, validator);
  return { vips, result };
}

function find(result: TranslationResult, cluster: string, kind: string, name: string): Record<string, unknown> {
  const found = result.outputs.get(cluster)?.resources.find((r) => r.kind === kind && r.metadata.name === name);
  assert.ok(found, `${cluster} has no ${kind} ${name}`);
  return found.spec as Record<string, unknown>;
}

describe('semantic addresses', () => {
  it('given a destination backed in two clusters, when translated, then its round-robin and closest entries carry one address each, equal in every cluster and from their own pools', () => {
    const { vips, result } = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }));
    assert.deepEqual(result.problems, []);
    const rr = vips.get('round-robin:shop/db') as string;
    const closest = vips.get('closest:shop/db') as string;
    assert.match(vips.get('shop/db') as string, /^10\.30\./);
    assert.match(rr, /^10\.31\./);
    assert.match(closest, /^10\.32\./);
    for (const cluster of ['cluster-a', 'cluster-b']) {
      assert.deepEqual(find(result, cluster, 'ServiceEntry', 'db-vd-round-robin')['addresses'], [rr]);
      assert.deepEqual(find(result, cluster, 'ServiceEntry', 'db-vd-round-robin')['hosts'], ['rr.db.global']);
      assert.deepEqual(find(result, cluster, 'ServiceEntry', 'db-vd-closest')['addresses'], [closest]);
      assert.deepEqual(find(result, cluster, 'ServiceEntry', 'db-vd-closest')['hosts'], ['closest.db.global']);
      // The same endpoints as the default host: only the DestinationRule differs.
      assert.deepEqual(
        find(result, cluster, 'ServiceEntry', 'db-vd-closest')['endpoints'],
        find(result, cluster, 'ServiceEntry', 'db-vd')['endpoints'],
      );
    }
  });

  it('given the policy hosts, when translated, then round robin turns locality load balancing off and closest fails over with outlier detection', () => {
    const { result } = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }));
    const rr = find(result, 'cluster-a', 'DestinationRule', 'db-vd-round-robin');
    assert.equal(rr['host'], 'rr.db.global');
    assert.deepEqual(rr['trafficPolicy'], {
      tls: { mode: 'ISTIO_MUTUAL' },
      loadBalancer: { simple: 'ROUND_ROBIN', localityLbSetting: { enabled: false } },
    });
    const closest = find(result, 'cluster-a', 'DestinationRule', 'db-vd-closest');
    const policy = closest['trafficPolicy'] as Record<string, unknown>;
    assert.equal(closest['host'], 'closest.db.global');
    assert.deepEqual(policy['loadBalancer'], { localityLbSetting: { enabled: true } });
    assert.ok(policy['outlierDetection'], 'failover needs outlier detection');
  });

  it('given instance addresses asked for, when translated, then each instance has a host holding only its endpoint, with one address in every cluster', () => {
    const { vips, result } = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1', 'db-2': '10.2.0.2' }));
    const address = vips.get('instance:shop/db-1') as string;
    assert.match(address, /^10\.33\./);
    const inA = find(result, 'cluster-a', 'ServiceEntry', 'db-vd-instance-db-1');
    const inB = find(result, 'cluster-b', 'ServiceEntry', 'db-vd-instance-db-1');
    assert.deepEqual(inA['hosts'], ['db-1.db.global']);
    assert.deepEqual(inA['addresses'], [address]);
    assert.deepEqual(inB['addresses'], [address]);
    // From cluster-a through cluster-b's gateway, one instance's weight; in cluster-b the pod itself.
    assert.deepEqual(
      (inA['endpoints'] as Record<string, unknown>[]).map((e) => [e['address'], e['weight']]),
      [['203.0.113.20', 1]],
    );
    assert.deepEqual(
      (inB['endpoints'] as Record<string, unknown>[]).map((e) => e['address']),
      ['10.2.0.1'],
    );
    assert.deepEqual(find(result, 'cluster-b', 'DestinationRule', 'db-vd-instance-db-1')['host'], 'db-1.db.global');
  });

  it('given an instance that moves to the other cluster, when translated again with the kept allocations, then its address stays and its host follows it', () => {
    const before = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }));
    const after = run(mesh({}, { 'db-0': '10.2.0.9', 'db-1': '10.2.0.1' }), before.vips);
    assert.equal(after.vips.get('instance:shop/db-0'), before.vips.get('instance:shop/db-0'));
    const inB = find(after.result, 'cluster-b', 'ServiceEntry', 'db-vd-instance-db-0');
    assert.deepEqual(inB['addresses'], [before.vips.get('instance:shop/db-0')]);
    assert.deepEqual(
      (inB['endpoints'] as Record<string, unknown>[]).map((e) => e['address']),
      ['10.2.0.9'],
    );
  });

  it('given the same inputs, when allocated and translated afresh (a restart without the kept allocations), then every address and output is the same', () => {
    const first = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }));
    const again = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }));
    assert.deepEqual([...again.vips].sort(), [...first.vips].sort());
    for (const cluster of ['cluster-a', 'cluster-b'])
      assert.equal(again.result.outputs.get(cluster)?.hash, first.result.outputs.get(cluster)?.hash);
  });

  it('given labelled pods but a destination that does not ask for instance addresses, when translated, then no instance host is produced', () => {
    const { result } = run(
      mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }, { 'meshrelay.io/policy-addresses': 'true' }),
    );
    const names = (result.outputs.get('cluster-a')?.resources ?? []).map((r) => r.metadata.name);
    assert.deepEqual(
      names.filter((n) => n.includes('instance')),
      [],
    );
    assert.ok(names.includes('db-vd-round-robin'));
  });

  it('given pools that overlap or are malformed, when checked, then a coded error names them', () => {
    assert.throws(
      () => checkVipPools({ '--vip-cidr': '10.30.0.0/16', '--instance-cidr': '10.30.128.0/17' }),
      (err: { code?: string; message: string }) =>
        err.code === 'MESHRELAY_ERR_INVALID_CONFIG' && /--vip-cidr .*--instance-cidr .*overlap/.test(err.message),
    );
    assert.throws(
      () => checkVipPools({ '--vip-cidr-closest': '10.32.0.0/33' }),
      (err: { code?: string; message: string }) =>
        err.code === 'MESHRELAY_ERR_INVALID_CONFIG' && err.message.startsWith('--vip-cidr-closest:'),
    );
    assert.doesNotThrow(() =>
      checkVipPools({ a: '10.30.0.0/16', b: '10.31.0.0/16', c: '10.32.0.0/16', d: '10.33.0.0/16' }),
    );
  });
});

describe('semantic hosts near the DNS length limit', () => {
  it('given a host that a prefix would make longer than 253 characters, when translated, then that policy host is left out and the output stays valid', () => {
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.gl`; // 247 characters
    const built = buildVirtualDestination({
      name: 'db',
      namespace: 'shop',
      hosts: [long],
      services: [{ name: 'db', namespace: 'shop' }],
      ports: [{ number: 7000, protocol: 'GRPC' }],
    });
    const vd = { ...built, metadata: { ...built.metadata, annotations: { 'meshrelay.io/policy-addresses': 'true' } } };
    const { result } = run(
      new Map([
        ['cluster-a', [...dbIn('a', { 'db-0': '10.1.0.1' }), vd]],
        ['cluster-b', dbIn('b', {})],
      ]),
    );
    assert.deepEqual(result.problems, []);
    const names = (result.outputs.get('cluster-a')?.resources ?? []).map((r) => `${r.kind}/${r.metadata.name}`);
    assert.ok(names.includes('ServiceEntry/db-vd-round-robin'), '`rr.` keeps it within 253');
    assert.ok(!names.includes('ServiceEntry/db-vd-closest') && !names.includes('DestinationRule/db-vd-closest'));
  });
});

describe('semantic addresses are opt-in per destination', () => {
  const names = (result: TranslationResult, cluster: string): string[] =>
    (result.outputs.get(cluster)?.resources ?? []).map((r) => `${r.kind}/${r.metadata.name}`);

  it('given a destination without the annotations, when allocated and translated, then it claims only its default address and gets no policy or instance host', () => {
    const { vips, result } = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }, {}));
    assert.deepEqual(result.problems, []);
    // Labelled pods still claim their instance keys: an address follows the instance, not a destination.
    assert.deepEqual(
      [...vips.keys()].filter((k) => !k.startsWith('instance:')),
      ['shop/db'],
    );
    for (const cluster of ['cluster-a', 'cluster-b']) {
      assert.deepEqual(
        names(result, cluster).filter((n) => n.includes('db-vd')),
        ['DestinationRule/db-vd', 'ServiceEntry/db-vd'],
      );
    }
  });

  it('given "false" on both annotations, when translated, then it is the same as no annotation and nothing is reported', () => {
    const off = run(
      mesh(
        { 'db-0': '10.1.0.1' },
        { 'db-1': '10.2.0.1' },
        {
          'meshrelay.io/policy-addresses': 'false',
          'meshrelay.io/instance-addresses': 'false',
        },
      ),
    );
    const none = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }, {}));
    assert.deepEqual(off.result.problems, []);
    assert.deepEqual([...off.vips].sort(), [...none.vips].sort());
    for (const cluster of ['cluster-a', 'cluster-b'])
      assert.equal(off.result.outputs.get(cluster)?.hash, none.result.outputs.get(cluster)?.hash);
  });

  it('given a destination that turns its policy addresses off while they are still allocated, when translated, then its policy hosts go at once and it no longer claims their keys', () => {
    const on = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' }));
    assert.ok(on.vips.has('round-robin:shop/db') && on.vips.has('closest:shop/db'));
    const perCluster = mesh(
      { 'db-0': '10.1.0.1' },
      { 'db-1': '10.2.0.1' },
      {
        'meshrelay.io/instance-addresses': 'true',
      },
    );
    const inputs = new Map([...perCluster].map(([c, resources]) => [c, buildTestInputSnapshot(c, resources)]));
    assert.deepEqual(
      virtualDestinationKeys(inputs).filter((k) => !k.startsWith('instance:')),
      ['shop/db'],
    );
    // The store releases a key only on positive evidence, so the kept allocations still hold them here.
    const { result } = run(perCluster, on.vips);
    for (const cluster of ['cluster-a', 'cluster-b']) {
      const list = names(result, cluster);
      assert.deepEqual(
        list.filter((n) => n.includes('round-robin') || n.includes('closest')),
        [],
      );
      assert.ok(list.includes('ServiceEntry/db-vd-instance-db-1'), 'instance addresses are a separate choice');
    }
  });

  it('given a value other than "true" or "false" on either annotation, when translated, then the destination is WARNING naming each annotation and its value, and those addresses stay on (a typo never releases addresses callers dial)', () => {
    const { vips, result } = run(
      mesh(
        { 'db-0': '10.1.0.1' },
        { 'db-1': '10.2.0.1' },
        {
          'meshrelay.io/policy-addresses': 'yes',
          'meshrelay.io/instance-addresses': 'True',
        },
      ),
    );
    const on = run(
      mesh(
        { 'db-0': '10.1.0.1' },
        { 'db-1': '10.2.0.1' },
        { 'meshrelay.io/policy-addresses': 'true', 'meshrelay.io/instance-addresses': 'true' },
      ),
    );
    assert.deepEqual([...vips.keys()].sort(), [...on.vips.keys()].sort());
    assert.ok(
      [...vips.keys()].some((k) => k.startsWith('round-robin:')),
      'the policy keys stay claimed',
    );
    const status = result.statuses.find((s) => s.kind === 'VirtualDestination' && s.name === 'db');
    assert.equal(status?.state.approval, 'WARNING');
    const message = status?.state.message ?? '';
    assert.match(
      message,
      /metadata\.annotations\["meshrelay\.io\/policy-addresses"\] is "yes", not "true" or "false": round-robin and closest addresses stay on until it is one of them/,
    );
    assert.match(
      message,
      /metadata\.annotations\["meshrelay\.io\/instance-addresses"\] is "True", not "true" or "false": instance addresses stay on until it is one of them/,
    );
    // Every host callers may already dial is still served, as with "true".
    for (const cluster of ['cluster-a', 'cluster-b'])
      assert.deepEqual(names(result, cluster), names(on.result, cluster));
  });

  it('given the incremental engine, when the policy annotation goes from "true" to a bad value and back, then each run matches a full translation', async () => {
    const engine = new IncrementalTranslator(validator);
    const vips = run(mesh({ 'db-0': '10.1.0.1' }, { 'db-1': '10.2.0.1' })).vips;
    for (const value of ['true', 'yes', 'true']) {
      const perCluster = mesh(
        { 'db-0': '10.1.0.1' },
        { 'db-1': '10.2.0.1' },
        { 'meshrelay.io/policy-addresses': value },
      );
      const inputs = new Map([...perCluster].map(([c, resources]) => [c, buildTestInputSnapshot(c, resources)]));
      const input = { inputs, clusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }], vips };
      const [incremental, full] = [await engine.run(input), translate(input, validator)];
      assert.deepEqual(incremental.statuses, full.statuses);
      for (const cluster of ['cluster-a', 'cluster-b'])
        assert.equal(incremental.outputs.get(cluster)?.hash, full.outputs.get(cluster)?.hash);
      // A bad value keeps the addresses on, so the host stays through the typo.
      assert.equal(names(incremental, 'cluster-a').includes('ServiceEntry/db-vd-round-robin'), true);
      const status = incremental.statuses.find((s) => s.kind === 'VirtualDestination');
      assert.equal(status?.state.approval, value === 'true' ? 'ACCEPTED' : 'WARNING');
    }
  });
});
