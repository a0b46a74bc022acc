// The trust domain end to end with the kubernetes provider: an agent watching the fake
// kube-apiserver (a test double from @meshrelay/testkit) and a real management server. The
// principals the server translates for an AccessPolicy follow Istio's mesh config ConfigMap
// as it changes, with no restart of either.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { Resource } from '@meshrelay/api';
import { waitFor, type FakeKubeApiServer } from '@meshrelay/testkit';
import { Agent } from '../src/agent.ts';
import { parseAgentConfig } from '../src/config.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';
import { startRelay } from './support/relay-harness.ts';
import { service, startFakeKube } from './support/kube.ts';

const CALLERS_POLICY = {
  apiVersion: 'security.policy.gloo.solo.io/v2',
  kind: 'AccessPolicy',
  metadata: { name: 'reviews-callers', namespace: 'bookinfo' },
  spec: {
    applyToDestinations: [{ selector: { name: 'reviews', namespace: 'bookinfo' } }],
    config: { authz: { allowedClients: [{ serviceAccountSelector: { name: 'productpage', namespace: 'bookinfo' } }] } },
  },
};

function putMeshConfig(kube: FakeKubeApiServer, mesh: string): void {
  kube.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'istio', namespace: 'istio-system' },
    data: { mesh },
  });
}

function principals(output: { resources: readonly Resource[] } | undefined): string[] {
  const policy = output?.resources.find((r) => r.kind === 'AuthorizationPolicy');
  const spec = policy?.spec as { rules?: { from?: { source?: { principals?: string[] } }[] }[] } | undefined;
  return (spec?.rules ?? []).flatMap((rule) => (rule.from ?? []).flatMap((f) => f.source?.principals ?? []));
}

test(
  'given an agent on the kubernetes provider whose Istio mesh config sets a trust domain, when the ConfigMap changes, then the server translates principals in the new trust domain',
  { timeout: 90_000 },
  async (t) => {
    const { server: kube } = await startFakeKube(t, { namespaces: ['default', 'bookinfo', 'istio-system'] });
    kube.put(service('reviews'));
    kube.put(CALLERS_POLICY);
    putMeshConfig(kube, 'trustDomain: a.example\n');
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
    const { logger } = captureLogger();
    const agent = new Agent(config, logger, {
      backoff: { baseMs: 20, capMs: 200 },
      defaultMetrics: false,
      healthHost: '127.0.0.1',
    });
    t.after(() => agent.stop());
    await agent.start();

    const current = () => relay.server.outputs.current('east');
    await waitFor(() => principals(current()).length > 0, {
      timeoutMs: 20_000,
      message: `no AuthorizationPolicy with principals: ${JSON.stringify(current()?.resources.map((r) => r.kind))}`,
    });
    assert.deepEqual(principals(current()), ['a.example/ns/bookinfo/sa/productpage']);

    putMeshConfig(kube, 'trustDomain: b.example\n');
    await waitFor(() => principals(current())[0] === 'b.example/ns/bookinfo/sa/productpage', {
      timeoutMs: 20_000,
      message: `principals after the change: ${JSON.stringify(principals(current()))}`,
    });

    putMeshConfig(kube, 'trustDomain: {\n');
    await waitFor(() => agent.status().problems.some((p) => p.object?.kind === 'ConfigMap'), {
      timeoutMs: 10_000,
      message: 'the malformed mesh config reported by the agent',
    });
    await relay.server.loop.runNow();
    assert.deepEqual(
      principals(current()),
      ['b.example/ns/bookinfo/sa/productpage'],
      'the last good trust domain stays',
    );
  },
);
