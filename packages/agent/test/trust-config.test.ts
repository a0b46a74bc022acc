import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { parseAgentConfig } from '../src/config.ts';
import { DirectoryCacertsStore, SecretCacertsStore } from '../src/trust/cacerts-stores.ts';
import { cacertsStoreFor, createMeshTrust } from '../src/trust/mesh-trust-setup.ts';
import { Registry } from 'prom-client';
import { captureLogger, tempDir } from './support/fixtures.ts';
import { startFakeKube } from './support/kube.ts';
import { writeFile } from 'node:fs/promises';

const REQUIRED = ['--cluster', 'east', '--manifests-dir', '/m', '--output-dir', '/o', '--state-dir', '/s'];
const TIMEOUT = { timeout: 60_000 };

test('mesh trust flags: parsed into typed values; 0 turns it off; bad values name the flag', TIMEOUT, () => {
  const config = parseAgentConfig([
    ...REQUIRED,
    '--cacerts-dir',
    '/c',
    '--workload-cert-dir',
    '/w',
    '--workload-cert-ttl',
    '1h',
    '--trust-interval',
    '1s',
  ]);
  assert.equal(config.cacertsDir, '/c');
  assert.equal(config.workloadCertDir, '/w');
  assert.equal(config.workloadCertTtlMs, 3_600_000);
  assert.equal(config.trustIntervalMs, 1000);
  assert.equal(parseAgentConfig([...REQUIRED, '--trust-interval', '0']).trustIntervalMs, 0);
  assert.throws(
    () => parseAgentConfig([...REQUIRED, '--workload-cert-ttl', '10ms', '--trust-interval', 'soon']),
    (err: Error) =>
      /--workload-cert-ttl: 10ms is shorter than 1 s/.test(err.message) && /--trust-interval/.test(err.message),
  );
});

test(
  'mesh trust setup: a directory by default, the Secret with --apply kubernetes, none when off',
  TIMEOUT,
  async (t) => {
    const dir = await tempDir(t);
    const byDefault = cacertsStoreFor(parseAgentConfig([...REQUIRED.slice(0, -1), dir]));
    assert.ok(byDefault instanceof DirectoryCacertsStore);
    assert.equal(byDefault.description, `directory ${path.join(dir, 'cacerts')}`);

    const { server } = await startFakeKube(t);
    await writeFile(path.join(dir, 'kubeconfig'), server.kubeConfigYaml());
    const kube = parseAgentConfig([
      ...REQUIRED,
      '--discovery-provider',
      'kubernetes',
      '--kubeconfig',
      path.join(dir, 'kubeconfig'),
      '--istio-namespace',
      'istio-east',
    ]);
    const secret = cacertsStoreFor(kube);
    assert.ok(secret instanceof SecretCacertsStore);
    assert.equal(secret.description, 'Secret istio-east/cacerts');

    const { logger } = captureLogger();
    const off = parseAgentConfig([...REQUIRED, '--trust-interval', '0']);
    const deps = { channel: () => undefined, discovered: () => undefined, registry: new Registry(), logger };
    assert.equal(createMeshTrust(off, deps), undefined);
    assert.ok(createMeshTrust(parseAgentConfig([...REQUIRED.slice(0, -1), dir]), deps));
  },
);
