import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { buildOutputSnapshot, resourceId, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { mtlsClient, next, openPull, registerCluster, startTestServer } from './harness.ts';

function configMap(name: string, value = 'v1'): Resource {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { value } } as Resource;
}

function output(resources: Resource[]): OutputSnapshot {
  return buildOutputSnapshot({ cluster: 'a', resources, provenance: [] });
}

/** A server and a Pull stream for cluster "a" whose agent announced it holds `held`. */
async function pulling(t: TestContext, held: Resource[]) {
  const server = await startTestServer(t);
  const a = await registerCluster(server, 'a');
  const pull = openPull(mtlsClient(t, server, a));
  const heldOutput = output(held);
  pull.write({ hello: { heldHash: heldOutput.hash, heldKeys: held.map(resourceId), heldProvenance: [] } });
  await waitFor(() => server.connections.streams('a').some((s) => s.kind === 'pull'));
  t.after(() => pull.cancel());
  return { server, pull };
}

const OLD = ['o1', 'o2', 'o3', 'o4', 'o5', 'o6'].map((n) => configMap(n));
const NEW = ['n1', 'n2', 'n3', 'n4'].map((n) => configMap(n));

test('given an output in flight, when newer outputs are produced before the ack, then only the newest follows the ack', async (t) => {
  const { server, pull } = await pulling(t, OLD);
  const first = output([...OLD, configMap('x1')]);
  server.outputs.publish(first);
  assert.equal((await next(pull, (m) => m.header ?? undefined)).hash, first.hash);
  const headers: string[] = [];
  pull.on('data', (m: { header?: { hash?: string } | null }) => m.header?.hash && headers.push(m.header.hash));
  const newest = output([...OLD, configMap('x3')]);
  server.outputs.publish(output([...OLD, configMap('x2')]));
  server.outputs.publish(newest);
  await waitFor(() => server.connections.streams('a')[0]?.queuedBytes() === 0);
  assert.deepEqual(headers, [], 'nothing goes out while the first output is unacked');
  pull.write({ ack: { hash: first.hash, accepted: true } });
  await waitFor(() => headers.length > 0);
  assert.deepEqual(headers, [newest.hash]);
});

test('given an agent that refused an output, when the next output arrives, then the guard judges it against what the agent still holds', async (t) => {
  const { server, pull } = await pulling(t, OLD);
  // Sent but refused: had the agent applied it, it would hold 10 resources.
  const refused = output([...OLD, ...NEW]);
  server.outputs.publish(refused);
  assert.equal((await next(pull, (m) => m.header ?? undefined)).hash, refused.hash);
  // Against the refused output this deletes 5 of 10 (not more than half: sent);
  // against what the agent holds it deletes 5 of 6 (held for an operator).
  const nextOutput = output([OLD[0] as Resource, ...NEW]);
  server.outputs.publish(nextOutput);
  pull.write({
    ack: { hash: refused.hash, accepted: false, errorCode: 'MESHRELAY_ERR_INVALID_RESOURCE', message: 'apply failed' },
  });
  await waitFor(() => server.held.list().some((h) => h.cluster === 'a' && h.hash === nextOutput.hash), {
    message: 'the next output was not held',
  });
  const held = server.held.list().find((h) => h.cluster === 'a');
  assert.deepEqual([held?.deleted, held?.held], [5, 6]);
});
