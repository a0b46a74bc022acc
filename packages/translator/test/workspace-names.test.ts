/**
 * Names belong to workspaces: another workspace defining the same namespace/name never replaces
 * a workspace's resource, and a clash inside one workspace is reported on both resources.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Resource } from '@meshrelay/api';
import {
  IncrementalTranslator,
  createIstioValidator,
  translate,
  type TranslationInput,
  type TranslationResult,
} from '../src/index.ts';
import { TESTDATA, parseCase, renderResult, snapshotsOf } from './support.ts';

const validator = createIstioValidator();

function rowSix(): { perCluster: Map<string, Resource[]>; input: TranslationInput } {
  return parseCase(readFileSync(join(TESTDATA, 'workspace-names', 'input.yaml'), 'utf8'));
}

function kindsIn(result: TranslationResult, cluster: string): string[] {
  return (result.outputs.get(cluster)?.resources ?? [])
    .map((r) => `${r.kind} ${r.metadata.namespace}/${r.metadata.name}`)
    .sort();
}

function statusOf(result: TranslationResult, source: string): { approval: string; message: string } | undefined {
  return result.statuses.find((s) => s.source === source)?.state;
}

describe('workspace names', { timeout: 120_000 }, () => {
  it("given strict workspaces, when team-b's cluster (sorting first) defines team-a's VirtualDestination and AccessPolicy names, then cluster-a keeps its outputs and routes", () => {
    const result = translate(rowSix().input, validator);
    const a = result.outputs.get('cluster-a')?.resources ?? [];
    const entry = a.find((r) => r.kind === 'ServiceEntry');
    assert.deepEqual((entry?.spec as { hosts?: string[] } | undefined)?.hosts, ['reviews.global']);
    assert.equal(
      (a.find((r) => r.kind === 'DestinationRule')?.spec as { host?: string } | undefined)?.host,
      'reviews.global',
    );
    const vs = JSON.stringify(a.find((r) => r.kind === 'VirtualService')?.spec);
    assert.equal(vs.includes('directResponse'), false, vs);
    assert.equal(vs.includes('reviews.global'), true, vs);
    const policy = JSON.stringify(a.find((r) => r.kind === 'AuthorizationPolicy')?.spec);
    assert.equal(policy.includes('cluster.local/ns/bookinfo/sa/productpage'), true, policy);
    assert.equal(
      kindsIn(result, 'apps-b').some((k) => k.startsWith('ServiceEntry')),
      true,
    );
    assert.equal(JSON.stringify(result.outputs.get('apps-b')?.resources).includes('reviews.global'), false);
    for (const source of [
      'VirtualDestination/bookinfo/reviews-global@cluster-a',
      'VirtualDestination/bookinfo/reviews-global@apps-b',
      'AccessPolicy/bookinfo/reviews-access@cluster-a',
      'AccessPolicy/bookinfo/reviews-access@apps-b',
    ]) {
      assert.equal(statusOf(result, source)?.approval, 'ACCEPTED', source);
    }
  });

  it("given strict workspaces, when team-b's same-named resources come and go, then cluster-a's output never changes", () => {
    const { perCluster, input } = rowSix();
    const alone = new Map(perCluster);
    alone.set(
      'apps-b',
      (perCluster.get('apps-b') ?? []).filter((r) => r.kind === 'Service'),
    );
    const without = translate({ ...input, inputs: snapshotsOf(alone) }, validator);
    const withThem = translate(input, validator);
    assert.equal(withThem.outputs.get('cluster-a')?.hash, without.outputs.get('cluster-a')?.hash);
  });

  it('given two clusters of one workspace defining the same VirtualDestination name, when translated, then both are reported, each naming the other, and the first is used', () => {
    const { perCluster, input } = rowSix();
    const workspaces = (input.workspaces ?? []).map((w) =>
      w.metadata.name === 'team-a'
        ? { ...w, spec: { workloadClusters: [{ name: 'cluster-*', namespaces: [{ name: 'bookinfo' }] }] } }
        : w,
    );
    const second = (perCluster.get('apps-b') ?? []).filter(
      (r) => r.kind === 'VirtualDestination' || r.kind === 'Service',
    );
    const mesh = new Map(perCluster);
    mesh.set('cluster-c', second);
    const result = translate({ ...input, workspaces, inputs: snapshotsOf(mesh) }, validator);
    const used = statusOf(result, 'VirtualDestination/bookinfo/reviews-global@cluster-a');
    const ignored = statusOf(result, 'VirtualDestination/bookinfo/reviews-global@cluster-c');
    assert.equal(used?.approval, 'WARNING');
    assert.match(used?.message ?? '', /also defined in cluster cluster-c of workspace team-a; this definition is used/);
    assert.equal(ignored?.approval, 'INVALID');
    assert.match(
      ignored?.message ?? '',
      /also defined in cluster cluster-a of workspace team-a; the definition from cluster-a is used/,
    );
    const entry = result.outputs.get('cluster-c')?.resources.find((r) => r.kind === 'ServiceEntry');
    assert.deepEqual((entry?.spec as { hosts?: string[] } | undefined)?.hosts, ['reviews.global']);
  });

  it('given one cluster of a workspace defining a name, when a cluster sorting first defines it too, then the used definition stays and the newcomer is reported', async () => {
    const { perCluster, input } = rowSix();
    const workspaces = (input.workspaces ?? []).map((w) =>
      w.metadata.name === 'team-a'
        ? { ...w, spec: { workloadClusters: [{ name: 'cluster-*', namespaces: [{ name: 'bookinfo' }] }] } }
        : w,
    );
    const mesh = new Map(perCluster);
    mesh.set(
      'cluster-c',
      (perCluster.get('apps-b') ?? []).filter((r) => r.kind === 'VirtualDestination' || r.kind === 'Service'),
    );
    const withoutA = new Map(mesh);
    withoutA.set(
      'cluster-a',
      (perCluster.get('cluster-a') ?? []).filter((r) => r.kind !== 'VirtualDestination'),
    );
    const hosts = (result: TranslationResult): unknown =>
      (
        result.outputs.get('cluster-a')?.resources.find((r) => r.kind === 'ServiceEntry')?.spec as
          { hosts?: string[] } | undefined
      )?.hosts;
    const before = translate({ ...input, workspaces, inputs: snapshotsOf(withoutA) }, validator);
    assert.deepEqual(hosts(before), ['ratings.global']);
    const next = { ...input, workspaces, inputs: snapshotsOf(mesh), previousNameOwners: before.nameOwners };
    const after = translate(next, validator);
    assert.deepEqual(hosts(after), ['ratings.global']);
    const newcomer = statusOf(after, 'VirtualDestination/bookinfo/reviews-global@cluster-a');
    assert.equal(newcomer?.approval, 'INVALID');
    assert.match(
      newcomer?.message ?? '',
      /also defined in cluster cluster-c of workspace team-a; the definition from cluster-c is used/,
    );
    const kept = statusOf(after, 'VirtualDestination/bookinfo/reviews-global@cluster-c');
    assert.equal(kept?.approval, 'WARNING');
    assert.match(kept?.message ?? '', /also defined in cluster cluster-a of workspace team-a; this definition is used/);
    const engine = new IncrementalTranslator(validator);
    await engine.run({ ...input, workspaces, inputs: snapshotsOf(withoutA) });
    assert.equal(renderResult(await engine.run(next)), renderResult(after));
  });

  it("given team-a importing team-b's VirtualDestinations, when team-b defines team-a's VirtualDestination name, then cluster-a keeps its own and team-b's is reported", () => {
    const { perCluster, input } = rowSix();
    const settings = (name: string, namespace: string, spec: object): Resource => ({
      apiVersion: 'admin.gloo.solo.io/v2',
      kind: 'WorkspaceSettings',
      metadata: { name, namespace },
      spec,
    });
    const mesh = new Map(perCluster);
    mesh.set('cluster-a', [
      ...(perCluster.get('cluster-a') ?? []),
      settings('team-a', 'bookinfo', { importFrom: [{ workspaces: [{ name: 'team-b' }] }] }),
    ]);
    mesh.set('apps-b', [
      ...(perCluster.get('apps-b') ?? []),
      settings('team-b', 'web', { exportTo: [{ workspaces: [{ name: 'team-a' }] }] }),
    ]);
    const result = translate({ ...input, inputs: snapshotsOf(mesh) }, validator);
    const entry = result.outputs.get('cluster-a')?.resources.find((r) => r.kind === 'ServiceEntry');
    assert.deepEqual((entry?.spec as { hosts?: string[] } | undefined)?.hosts, ['reviews.global']);
    assert.equal(statusOf(result, 'VirtualDestination/bookinfo/reviews-global@cluster-a')?.approval, 'ACCEPTED');
    const imported = statusOf(result, 'VirtualDestination/bookinfo/reviews-global@apps-b');
    assert.equal(imported?.approval, 'WARNING');
    assert.match(
      imported?.message ?? '',
      /output ServiceEntry\.networking\.istio\.io\/v1 bookinfo\/reviews-global-vd in cluster cluster-a is also produced by another resource/,
    );
  });

  it('given the row-six inputs, when the incremental engine runs them after another world, then its result is the full translation byte for byte', async () => {
    const { perCluster, input } = rowSix();
    const engine = new IncrementalTranslator(validator);
    const alone = new Map(perCluster);
    alone.set('apps-b', []);
    await engine.run({ ...input, inputs: snapshotsOf(alone) });
    const incremental = await engine.run(input);
    assert.equal(renderResult(incremental), renderResult(translate(input, validator)));
  });
});
