import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { loadKubeConfig } from '../src/index.ts';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- { name: east, cluster: { server: "https://east.example:6443" } }
- { name: west, cluster: { server: "https://west.example:6443" } }
users:
- { name: admin, user: { token: t } }
contexts:
- { name: east, context: { cluster: east, user: admin } }
- { name: west, context: { cluster: west, user: admin } }
current-context: east
`;

function kubeconfigFile(t: TestContext): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'meshrelay-kubeconfig-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'config');
  writeFileSync(file, KUBECONFIG);
  return file;
}

test('given a kubeconfig file, when loaded, then its current context is used', (t) => {
  assert.equal(
    loadKubeConfig({ kubeconfig: kubeconfigFile(t) }).getCurrentCluster()?.server,
    'https://east.example:6443',
  );
});

test('given a kubeconfig file and a context, when loaded, then that context is used', (t) => {
  assert.equal(
    loadKubeConfig({ kubeconfig: kubeconfigFile(t), context: 'west' }).getCurrentCluster()?.server,
    'https://west.example:6443',
  );
});

test('given an unknown context, when loaded, then the error names --kube-context and the known contexts', (t) => {
  assert.throws(
    () => loadKubeConfig({ kubeconfig: kubeconfigFile(t), context: 'north' }),
    (err: Error & { code?: string }) =>
      err.code === 'MESHRELAY_ERR_INVALID_CONFIG' && /--kube-context: no context "north".*east, west/.test(err.message),
  );
});

test('given a missing kubeconfig file, when loaded, then the error names --kubeconfig and the file', () => {
  assert.throws(
    () => loadKubeConfig({ kubeconfig: '/nonexistent/kubeconfig' }),
    /--kubeconfig: cannot load \/nonexistent\/kubeconfig/,
  );
});

test('given no kubeconfig outside a pod, when loaded, then the error says --kubeconfig is required', () => {
  const saved = process.env['KUBERNETES_SERVICE_HOST'];
  delete process.env['KUBERNETES_SERVICE_HOST'];
  try {
    assert.throws(() => loadKubeConfig({}), /--kubeconfig is required outside a Kubernetes pod/);
  } finally {
    if (saved !== undefined) process.env['KUBERNETES_SERVICE_HOST'] = saved;
  }
});
