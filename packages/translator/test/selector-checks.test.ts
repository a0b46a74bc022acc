/** Selectors that match nothing are WARNINGs naming the selector. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { buildGloo } from '@meshrelay/testkit';
import { createIstioValidator, translate, type TranslationInput, type TranslationResult } from '../src/index.ts';
import { twoClusterMesh } from './fixtures.ts';
import { snapshotsOf } from './support.ts';

const validator = createIstioValidator();

function workspace(name: string, cluster: string, namespaces: string[]): Resource {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'Workspace',
    metadata: { name, namespace: 'gloo-mesh' },
    spec: { workloadClusters: [{ name: cluster, namespaces: namespaces.map((n) => ({ name: n })) }] },
  };
}

const WORKSPACES = [workspace('team-a', 'cluster-a', ['bookinfo']), workspace('team-b', 'cluster-b', ['*'])];

function outlierFor(selector: Record<string, string>): Resource {
  return buildGloo('OutlierDetectionPolicy', {
    name: 'strict',
    namespace: 'bookinfo',
    spec: { applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector }], config: { consecutiveErrors: 2 } },
  });
}

function run(extra: Resource[], workspaces?: Resource[], cluster = 'cluster-a'): TranslationResult {
  const mesh = twoClusterMesh();
  mesh.get(cluster)?.push(...extra);
  const input: TranslationInput = {
    inputs: snapshotsOf(mesh),
    clusters: [],
    vips: new Map([['bookinfo/reviews-global', '10.30.0.7']]),
    ...(workspaces ? { workspaces } : {}),
  };
  return translate(input, validator);
}

function stateOf(result: TranslationResult, source: string): { approval: string; message: string } | undefined {
  return result.statuses.find((s) => s.source === source)?.state;
}

describe('selectors that match nothing', { timeout: 120_000 }, () => {
  it('given a policy selecting workspace team-z, when no such workspace exists, then it is a WARNING naming the selector', () => {
    const result = run([outlierFor({ workspace: 'team-z' })], WORKSPACES);
    const state = stateOf(result, 'OutlierDetectionPolicy/bookinfo/strict@cluster-a');
    assert.equal(state?.approval, 'WARNING');
    assert.match(
      state?.message ?? '',
      /spec\.applyToDestinations\[0\]\.selector\.workspace team-z names no workspace \(defined: team-a, team-b\); the selector matches nothing/,
    );
  });

  it('given a policy selecting an existing workspace, when translated, then no selector warning is raised', () => {
    const result = run([outlierFor({ workspace: 'team-a' })], WORKSPACES);
    assert.equal(stateOf(result, 'OutlierDetectionPolicy/bookinfo/strict@cluster-a')?.approval, 'ACCEPTED');
  });

  it('given no Workspace, when a policy selects a workspace by name, then the WARNING says every resource is in the implicit global workspace', () => {
    const result = run([outlierFor({ workspace: 'team-a' })]);
    const state = stateOf(result, 'OutlierDetectionPolicy/bookinfo/strict@cluster-a');
    assert.equal(state?.approval, 'WARNING');
    assert.match(
      state?.message ?? '',
      /workspace team-a names no workspace \(none is defined: every resource is in the implicit global workspace\)/,
    );
  });

  it('given a selector naming an unknown cluster, when translated, then it is a WARNING naming the cluster', () => {
    const result = run([outlierFor({ cluster: 'cluster-q' })], WORKSPACES);
    const state = stateOf(result, 'OutlierDetectionPolicy/bookinfo/strict@cluster-a');
    assert.equal(state?.approval, 'WARNING');
    assert.match(
      state?.message ?? '',
      /spec\.applyToDestinations\[0\]\.selector\.cluster cluster-q names no known cluster/,
    );
  });

  it('given WorkspaceSettings importing from a misspelt workspace, when translated, then it is a WARNING naming the entry', () => {
    const settings: Resource = {
      apiVersion: 'admin.gloo.solo.io/v2',
      kind: 'WorkspaceSettings',
      metadata: { name: 'team-b', namespace: 'web' },
      spec: { importFrom: [{ workspaces: [{ name: 'tema-a' }] }] },
    };
    const result = run([settings], WORKSPACES, 'cluster-b');
    const state = stateOf(result, 'WorkspaceSettings/web/team-b@cluster-b');
    assert.equal(state?.approval, 'WARNING');
    assert.match(state?.message ?? '', /spec\.importFrom\[0\]\.workspaces\[0\]\.name tema-a names no workspace/);
  });

  it('given a Workspace whose cluster name matches no known cluster, when translated, then the Workspace is a WARNING naming it', () => {
    const result = run([], [...WORKSPACES, workspace('team-c', 'cluster-typo', ['*'])]);
    const state = stateOf(result, 'Workspace/gloo-mesh/team-c@management');
    assert.equal(state?.approval, 'WARNING');
    assert.match(state?.message ?? '', /spec\.workloadClusters\[0\]\.name cluster-typo names no known cluster/);
    assert.equal(stateOf(result, 'Workspace/gloo-mesh/team-a@management')?.approval, 'ACCEPTED');
  });
});
