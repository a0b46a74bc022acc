// A KubernetesCluster's spec.trustDomain reaches the translator: another cluster's
// AuthorizationPolicy names that cluster's clients with it, not with cluster.local.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import {
  bearer,
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  register,
  registerCluster,
  service,
  startTestServer,
  type TestServer,
} from './harness.ts';

const ALLOW_EAST_CLIENT: Resource = {
  apiVersion: 'security.policy.gloo.solo.io/v2',
  kind: 'AccessPolicy',
  metadata: { name: 'x-from-east', namespace: 'default' },
  spec: {
    applyToDestinations: [{ selector: { name: 'x' } }],
    config: {
      authz: {
        allowedClients: [{ serviceAccountSelector: { cluster: 'east', namespace: 'default', name: 'client' } }],
      },
    },
  },
};

async function registerOverApi(server: TestServer, body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${server.api}/api/v1/clusters`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(server) },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { token: string }).token;
}

function principalsIn(server: TestServer, cluster: string): unknown[] {
  const policies = server.outputs.current(cluster)?.resources.filter((r) => r.kind === 'AuthorizationPolicy') ?? [];
  return policies.flatMap((p) =>
    ((p.spec as { rules?: { from?: { source?: { principals?: unknown[] } }[] }[] }).rules ?? []).flatMap((rule) =>
      (rule.from ?? []).flatMap((from) => from.source?.principals ?? []),
    ),
  );
}

test('given a cluster registered over the API with trustDomain east.example, when another cluster allows its clients, then the AuthorizationPolicy principals use east.example', async (t) => {
  const server = await startTestServer(t);
  const east = await register(
    server,
    'east',
    await registerOverApi(server, { name: 'east', trustDomain: 'east.example' }),
  );
  const west = await registerCluster(server, 'west');
  const eastPush = openPush(mtlsClient(t, server, east));
  pushSnapshot(eastPush, 'east', 1, [service('client')]);
  await next(eastPush, (m) => m.ack ?? undefined);
  const westPush = openPush(mtlsClient(t, server, west));
  pushSnapshot(westPush, 'west', 1, [service('x'), ALLOW_EAST_CLIENT]);
  await next(westPush, (m) => m.ack ?? undefined);

  await waitFor(() => principalsIn(server, 'west').length > 0, {
    timeoutMs: 10_000,
    message: "west's AuthorizationPolicy",
  });
  assert.deepEqual(principalsIn(server, 'west'), ['east.example/ns/default/sa/client']);
});
