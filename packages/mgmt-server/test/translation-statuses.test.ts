import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { mtlsClient, next, openPush, pushSnapshot, registerCluster, service, startTestServer } from './harness.ts';

function accessPolicy(authz: Record<string, unknown>): Resource {
  return {
    apiVersion: 'security.policy.gloo.solo.io/v2',
    kind: 'AccessPolicy',
    metadata: { name: 'x-only', namespace: 'default' },
    spec: { applyToDestinations: [{ selector: { name: 'x' } }], config: { authz } },
  };
}

const GOOD = accessPolicy({ allowedClients: [{ serviceAccountSelector: { namespace: 'default', name: 'client' } }] });
const BROKEN = accessPolicy({
  allowedClients: [{ serviceAccountSelector: { namespace: 'default', name: 'client' } }],
  allowedHosts: ['x.example.com'],
});

test('given an AccessPolicy translated once, when a push breaks it, then the served output keeps its last good AuthorizationPolicy and its status is INVALID', async (t) => {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  const stream = openPush(mtlsClient(t, server, a));
  pushSnapshot(stream, 'a', 1, [service('x'), GOOD]);
  await next(stream, (m) => m.ack ?? undefined);
  const policyOf = (): Resource | undefined =>
    server.outputs.current('a')?.resources.find((r) => r.kind === 'AuthorizationPolicy');
  await waitFor(() => policyOf() !== undefined, { timeoutMs: 10_000, message: 'first AuthorizationPolicy' });
  const good = policyOf();

  pushSnapshot(stream, 'a', 2, [service('x'), BROKEN]);
  await next(stream, (m) => m.ack ?? undefined);
  const statusOf = () => server.loop.status().resources.find((s) => s.kind === 'AccessPolicy');
  await waitFor(() => statusOf()?.state.approval === 'INVALID', { timeoutMs: 10_000, message: 'INVALID status' });
  assert.match(statusOf()?.state.message ?? '', /allowedHosts: unknown field/);
  assert.deepEqual(policyOf(), good);
});

test('given a workspaces file, when a cluster pushes a resource in a namespace no workspace owns, then its status is INVALID', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'workspaces-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'workspaces.yaml');
  writeFileSync(
    file,
    'apiVersion: admin.gloo.solo.io/v2\nkind: Workspace\nmetadata: { name: team, namespace: gloo-mesh }\nspec:\n  workloadClusters: [{ name: a, namespaces: [{ name: owned }] }]\n',
  );
  const server = await startTestServer(t, ['--workspaces-file', file]);
  const a = await registerCluster(server, 'a');
  const stream = openPush(mtlsClient(t, server, a));
  pushSnapshot(stream, 'a', 1, [service('x'), GOOD]);
  await next(stream, (m) => m.ack ?? undefined);
  const statusOf = () => server.loop.status().resources.find((s) => s.kind === 'AccessPolicy');
  await waitFor(() => statusOf()?.state.approval === 'INVALID', { timeoutMs: 10_000, message: 'INVALID status' });
  assert.match(statusOf()?.state.message ?? '', /namespace default of cluster a belongs to no workspace/);
  assert.ok(server.loop.status().resources.some((s) => s.kind === 'Workspace' && s.state.approval === 'ACCEPTED'));
});
