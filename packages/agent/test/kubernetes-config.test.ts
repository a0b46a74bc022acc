import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { parseAgentConfig } from '../src/config.ts';

const BASE = ['--cluster', 'east', '--state-dir', '/s'];

function configError(argv: string[]): MeshrelayError {
  try {
    parseAgentConfig(argv);
  } catch (err) {
    assert.ok(err instanceof MeshrelayError, `expected a MeshrelayError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the config to be refused');
}

function withEnv(t: TestContext, name: string, value: string): void {
  const previous = process.env[name];
  process.env[name] = value;
  t.after(() => {
    if (previous === undefined) delete process.env[name];
    else process.env[name] = previous;
  });
}

test('given --discovery-provider kubernetes, when parsed, then no directories are required and apply follows the provider', () => {
  const config = parseAgentConfig([
    ...BASE,
    '--discovery-provider',
    'kubernetes',
    '--kubeconfig',
    '/k/config',
    '--kube-context',
    'east-admin',
  ]);
  assert.equal(config.discoveryProvider, 'kubernetes');
  assert.equal(config.apply, 'kubernetes');
  assert.equal(config.kubeconfig, '/k/config');
  assert.equal(config.kubeContext, 'east-admin');
  assert.deepEqual(config.watchNamespaces, []);
  assert.equal(config.manifestsDir, undefined);
  assert.equal(config.outputDir, undefined);
});

test('given the kubernetes provider with --apply file, when --output-dir is missing, then the error names it', () => {
  const err = configError([...BASE, '--discovery-provider', 'kubernetes', '--apply', 'file']);
  assert.equal(err.code, 'MESHRELAY_ERR_INVALID_CONFIG');
  assert.match(err.message, /--output-dir is required with --apply file/);
  assert.doesNotMatch(err.message, /--manifests-dir/);
});

test('given the default file provider, when --manifests-dir is missing, then the error names it', () => {
  const err = configError([...BASE, '--output-dir', '/o']);
  assert.match(err.message, /--manifests-dir is required with --discovery-provider file/);
});

test('given an unknown backend name, when parsed, then the error names the flag and the choices', () => {
  const err = configError([...BASE, '--discovery-provider', 'consul']);
  assert.match(err.message, /--discovery-provider: "consul" is not one of file, kubernetes/);
});

test('given --watch-namespaces with spaces and repeats, when parsed, then each namespace appears once', () => {
  const config = parseAgentConfig([
    ...BASE,
    '--discovery-provider',
    'kubernetes',
    '--watch-namespaces',
    'bookinfo, istio-system,bookinfo',
  ]);
  assert.deepEqual(config.watchNamespaces, ['bookinfo', 'istio-system']);
});

test('given a watch namespace that is not a DNS label, when parsed, then the error names the flag and the value', () => {
  const err = configError([...BASE, '--discovery-provider', 'kubernetes', '--watch-namespaces', 'bookinfo,Bad_NS']);
  assert.match(err.message, /--watch-namespaces: "Bad_NS" is not a namespace name/);
});

test('given --istio-namespace, when parsed, then it names where the mesh config is read; one that is not a DNS label is refused naming the flag', () => {
  assert.equal(
    parseAgentConfig([...BASE, '--discovery-provider', 'kubernetes', '--istio-namespace', 'istio-config'])
      .istioNamespace,
    'istio-config',
  );
  const err = configError([...BASE, '--discovery-provider', 'kubernetes', '--istio-namespace', 'Istio_System']);
  assert.match(err.message, /--istio-namespace: "Istio_System" is not a namespace name/);
});

test('given KUBECONFIG and MESHRELAY_AGENT_DISCOVERY_PROVIDER in the environment, when parsed, then they configure the kubernetes backends', (t) => {
  withEnv(t, 'KUBECONFIG', '/env/kubeconfig');
  withEnv(t, 'MESHRELAY_AGENT_DISCOVERY_PROVIDER', 'kubernetes');
  const config = parseAgentConfig(BASE);
  assert.equal(config.discoveryProvider, 'kubernetes');
  assert.equal(config.kubeconfig, '/env/kubeconfig');
});
