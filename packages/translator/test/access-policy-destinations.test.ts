// AccessPolicy targets chosen by selectors: Services (applyToDestinations of kind SERVICE) and workloads
// (applyToWorkloads) in every cluster.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { buildGloo, buildPod, buildService } from '@meshrelay/testkit';
import { createIstioValidator, translate } from '../src/index.ts';
import { twoClusterMesh } from './fixtures.ts';
import { snapshotsOf } from './support.ts';

const validator = createIstioValidator();
const ports = [{ name: 'http', port: 9080 }];

/** The AuthorizationPolicies of `cluster`'s output: name → the workload labels they select. */
function authorizationTargets(mesh: Map<string, Resource[]>, cluster: string): Record<string, unknown> {
  const result = translate({ inputs: snapshotsOf(mesh), clusters: [], vips: new Map() }, validator);
  const policies = (result.outputs.get(cluster)?.resources ?? []).filter((r) => r.kind === 'AuthorizationPolicy');
  return Object.fromEntries(
    policies.map((p) => [p.metadata.name, (p.spec as { selector?: { matchLabels?: unknown } }).selector?.matchLabels]),
  );
}

describe('AccessPolicy on Services chosen by a selector', () => {
  it('given Services labelled in two clusters, when a policy selects by label (and by label and namespace), then exactly the matching Services get an AuthorizationPolicy', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push(
      buildService({
        name: 'ledger',
        namespace: 'bank',
        ports,
        selector: { app: 'ledger' },
        labels: { tier: 'money' },
      }),
      buildService({
        name: 'teller',
        namespace: 'bank',
        ports,
        selector: { app: 'teller' },
        labels: { tier: 'front' },
      }),
      buildGloo('AccessPolicy', {
        name: 'money',
        namespace: 'bank',
        spec: {
          applyToDestinations: [{ selector: { labels: { tier: 'money' } } }],
          config: { authz: { allowedClients: [{ serviceAccountSelector: { name: 'teller', namespace: 'bank' } }] } },
        },
      }),
      buildGloo('AccessPolicy', {
        name: 'audit',
        namespace: 'bank',
        spec: {
          applyToDestinations: [{ kind: 'SERVICE', selector: { namespace: 'vault', labels: { tier: 'money' } } }],
          config: {
            authz: { allowedClients: [{ serviceAccountSelector: { name: 'auditor', namespace: 'vault' } }] },
          },
        },
      }),
    );
    mesh.get('cluster-b')?.push(
      buildService({
        name: 'safe',
        namespace: 'vault',
        ports,
        selector: { app: 'safe' },
        labels: { tier: 'money', extra: 'x' },
      }),
      buildService({ name: 'lobby', namespace: 'vault', ports, selector: { app: 'lobby' } }),
    );
    const targets = authorizationTargets(mesh, 'cluster-a');
    const names = Object.keys(targets).sort();
    assert.equal(names.filter((n) => n.startsWith('money')).length, 2, `policies: ${names.join(', ')}`);
    assert.deepEqual(
      names
        .filter((n) => n.startsWith('money'))
        .map((n) => targets[n])
        .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [{ app: 'ledger' }, { app: 'safe' }],
    );
    assert.deepEqual(
      names.filter((n) => n.startsWith('audit')).map((n) => targets[n]),
      [{ app: 'safe' }],
    );
  });

  it('given pods labelled in two clusters, when a policy selects workloads by two labels without a namespace, then it applies in the namespaces whose pods carry both', () => {
    const mesh = twoClusterMesh();
    mesh.get('cluster-a')?.push(
      buildPod({ name: 'ledger-1', namespace: 'bank', ip: '10.1.5.1', labels: { app: 'ledger', tier: 'money' } }),
      buildPod({ name: 'ledger-2', namespace: 'branch', ip: '10.1.5.2', labels: { app: 'ledger', tier: 'other' } }),
      buildGloo('AccessPolicy', {
        name: 'ledgers',
        namespace: 'bank',
        spec: {
          applyToWorkloads: [{ selector: { labels: { app: 'ledger', tier: 'money' } } }],
          config: { authz: { allowedClients: [{ serviceAccountSelector: { name: 'teller', namespace: 'bank' } }] } },
        },
      }),
    );
    mesh.get('cluster-b')?.push(
      buildPod({
        name: 'ledger-3',
        namespace: 'vault',
        ip: '10.2.5.3',
        labels: { tier: 'money', app: 'ledger', extra: 'x' },
      }),
      buildPod({ name: 'other', namespace: 'lobby', ip: '10.2.5.4', labels: { tier: 'money' } }),
    );
    const result = translate({ inputs: snapshotsOf(mesh), clusters: [], vips: new Map() }, validator);
    const policies = (result.outputs.get('cluster-a')?.resources ?? []).filter(
      (r) => r.kind === 'AuthorizationPolicy' && r.metadata.name.startsWith('ledgers'),
    );
    assert.deepEqual(policies.map((p) => p.metadata.namespace).sort(), ['bank', 'vault']);
    for (const p of policies)
      assert.deepEqual((p.spec as { selector?: { matchLabels?: unknown } }).selector?.matchLabels, {
        app: 'ledger',
        tier: 'money',
      });
  });
});
