import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { MeshrelayError, OWNER_LABEL, OWNER_LABEL_VALUE, type Resource } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { Agent } from '../src/agent.ts';
import { parseAgentConfig } from '../src/config.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';
import { logged, settled, startRelay } from './support/relay-harness.ts';
import { service, startFakeKube } from './support/kube.ts';

const VIRTUAL_SERVICE: Resource = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name: 'reviews', namespace: 'bookinfo', labels: { [OWNER_LABEL]: OWNER_LABEL_VALUE } },
  spec: { hosts: ['reviews.global'] },
};

test('given --discovery-provider kubernetes and a kubeconfig, when the agent runs, then it pushes the cluster objects and server-side applies the output', async (t) => {
  const { server: kube } = await startFakeKube(t, { namespaces: ['default', 'bookinfo'] });
  kube.put(service('reviews'));
  const relay = await startRelay(t);
  const root = await tempDir(t);
  await writeFile(path.join(root, 'kubeconfig'), kube.kubeConfigYaml());
  await writeFile(path.join(root, 'ca.pem'), relay.caPem);
  const config = parseAgentConfig([
    '--cluster',
    'east',
    '--server-address',
    relay.address,
    '--token',
    relay.token,
    '--root-ca-file',
    path.join(root, 'ca.pem'),
    '--state-dir',
    path.join(root, 'state'),
    '--discovery-provider',
    'kubernetes',
    '--kubeconfig',
    path.join(root, 'kubeconfig'),
    '--health-port',
    '0',
    '--debounce-ms',
    '20',
  ]);
  const { logger, lines } = captureLogger();
  const agent = new Agent(config, logger, {
    backoff: { baseMs: 20, capMs: 200 },
    defaultMetrics: false,
    healthHost: '127.0.0.1',
  });
  t.after(() => agent.stop());
  await agent.start();

  await waitFor(() => relay.stored.length === 1 && settled(relay), { timeoutMs: 10_000 });
  assert.deepEqual(
    relay.stored[0]?.resources.map((r) => `${r.kind}/${r.metadata.name}`),
    ['Service/reviews'],
  );
  const output = relay.publish([VIRTUAL_SERVICE], [{ cluster: 'east', inputHash: relay.stored[0]?.hash ?? '' }]);
  await waitFor(() => relay.server.connections.applied('east') === output.hash, { timeoutMs: 10_000 });
  const applied = kube.get('VirtualService', 'reviews', 'bookinfo');
  assert.equal(applied?.metadata.labels?.[OWNER_LABEL], OWNER_LABEL_VALUE);
  assert.equal(agent.status().heldOutputHash, output.hash);
  assert.ok(logged(lines, /^output applied$/));
  assert.throws(
    () => agent.outputCurrentPath,
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_CONFIG',
  );

  kube.put(service('ratings'));
  await waitFor(() => relay.stored.length === 2, { timeoutMs: 5000 });
  assert.deepEqual(
    relay.stored[1]?.resources.map((r) => r.metadata.name),
    ['ratings', 'reviews'],
  );
});

test('given the kubernetes provider without --kubeconfig outside a cluster, when the agent is built, then the error names --kubeconfig', (t) => {
  const saved = process.env['KUBERNETES_SERVICE_HOST'];
  delete process.env['KUBERNETES_SERVICE_HOST'];
  t.after(() => {
    if (saved !== undefined) process.env['KUBERNETES_SERVICE_HOST'] = saved;
  });
  const config = parseAgentConfig([
    '--cluster',
    'east',
    '--state-dir',
    '/tmp/unused',
    '--discovery-provider',
    'kubernetes',
  ]);
  const { logger } = captureLogger();
  assert.throws(
    () => new Agent(config, logger),
    (err: unknown) =>
      err instanceof MeshrelayError &&
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' &&
      err.message.includes('--kubeconfig'),
  );
});
