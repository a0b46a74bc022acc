import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { replaceFile } from '../src/trust/atomic-file.ts';
import { CACERTS_KEYS, type CacertsFiles } from '../src/trust/cacerts.ts';
import { DirectoryCacertsStore, SecretCacertsStore } from '../src/trust/cacerts-stores.ts';
import { tempDir } from './support/fixtures.ts';
import { startFakeKube } from './support/kube.ts';

const TIMEOUT = { timeout: 60_000 };

// The stores move text; what the text must be is checked by checkCacerts (trust-cacerts.test.ts).
function files(tag: string, roots: readonly string[]): CacertsFiles {
  return {
    'ca-cert.pem': `cert ${tag}\n`,
    'ca-key.pem': `key ${tag}\n`,
    'cert-chain.pem': `chain ${tag}\n`,
    'root-cert.pem': roots.map((r) => `-----BEGIN CERTIFICATE-----\n${r}\n-----END CERTIFICATE-----\n`).join(''),
  };
}

async function recordingStore(dir: string): Promise<{ store: DirectoryCacertsStore; order: string[] }> {
  const order: string[] = [];
  const store = new DirectoryCacertsStore(dir, async (file, content, mode) => {
    order.push(path.basename(file));
    await replaceFile(file, content, mode);
  });
  return { store, order };
}

test('directory cacerts: four files, key 0600, loaded back; nothing stored reads as none', TIMEOUT, async (t) => {
  const dir = path.join(await tempDir(t), 'cacerts');
  const { store } = await recordingStore(dir);
  assert.equal(await store.load(), undefined);
  const first = files('a', ['OLD']);
  await store.write(first, undefined);
  assert.deepEqual(await store.load(), first);
  assert.equal((await stat(path.join(dir, 'ca-key.pem'))).mode & 0o777, 0o600);
  assert.equal((await stat(path.join(dir, 'root-cert.pem'))).mode & 0o777, 0o644);
});

test(
  'directory cacerts: a gained root is written first, a lost root last, unchanged files not at all',
  TIMEOUT,
  async (t) => {
    const dir = path.join(await tempDir(t), 'cacerts');
    const { store, order } = await recordingStore(dir);
    const steady = files('a', ['OLD']);
    await store.write(steady, undefined);
    assert.equal(order[0], 'root-cert.pem', 'the first bundle goes before the chain it must verify');

    order.length = 0;
    const added = { ...steady, 'root-cert.pem': files('a', ['OLD', 'NEW'])['root-cert.pem'] };
    await store.write(added, steady);
    assert.deepEqual(order, ['root-cert.pem'], 'phase 1 changes the bundle alone');

    order.length = 0;
    const resigned = { ...files('b', ['OLD', 'NEW']) };
    await store.write(resigned, added);
    assert.deepEqual(order, ['ca-key.pem', 'ca-cert.pem', 'cert-chain.pem'], 'phase 2 changes the intermediate alone');

    order.length = 0;
    const removed = { ...resigned, 'root-cert.pem': files('b', ['NEW'])['root-cert.pem'] };
    await store.write(removed, resigned);
    assert.deepEqual(order, ['root-cert.pem']);

    order.length = 0;
    const both = files('c', ['NEW', 'NEWER']);
    await store.write(both, removed);
    assert.equal(order[0], 'root-cert.pem', 'a bundle that gains a root is written before a chain under it');
    const lost = files('d', ['NEWER']);
    order.length = 0;
    await store.write(lost, both);
    assert.equal(order.at(-1), 'root-cert.pem', 'a bundle that loses a root is written after the chain moved away');
    assert.deepEqual(await store.load(), lost);
  },
);

test(
  'Secret cacerts: created with exactly the four keys, then updated keeping its other metadata',
  TIMEOUT,
  async (t) => {
    const { server, kubeConfig } = await startFakeKube(t);
    const store = new SecretCacertsStore({ kubeConfig, namespace: 'istio-system' });
    assert.equal(await store.load(), undefined);
    const first = files('a', ['OLD']);
    await store.write(first);
    const created = server.get('Secret', 'cacerts', 'istio-system');
    assert.deepEqual(Object.keys((created?.['data'] as object) ?? {}).sort(), [...CACERTS_KEYS].sort());
    assert.deepEqual(await store.load(), first);

    // An operator's labels and annotations, and a key istiod would take for its own generated CA.
    const existing = server.get('Secret', 'cacerts', 'istio-system') as Record<string, unknown>;
    const metadata = existing['metadata'] as Record<string, unknown>;
    server.put({
      ...existing,
      metadata: { ...metadata, labels: { team: 'mesh' }, annotations: { 'example.com/owner': 'ops' } },
      data: { ...(existing['data'] as object), 'istio-generated': Buffer.from('true').toString('base64') },
    });
    const second = files('b', ['OLD', 'NEW']);
    await store.write(second);
    const updated = server.get('Secret', 'cacerts', 'istio-system');
    const data = updated?.['data'] as Record<string, string>;
    assert.deepEqual(Object.keys(data).sort(), [...CACERTS_KEYS].sort(), 'never the istio-generated key');
    assert.equal(Buffer.from(data['root-cert.pem'] ?? '', 'base64').toString('utf8'), second['root-cert.pem']);
    const kept = updated?.['metadata'] as { labels?: object; annotations?: object };
    assert.deepEqual(kept.labels, { team: 'mesh' });
    assert.deepEqual(kept.annotations, { 'example.com/owner': 'ops' });
    assert.deepEqual(await store.load(), second);
  },
);

test(
  'Secret cacerts: a missing key reads as none; an API failure is an error naming the Secret',
  TIMEOUT,
  async (t) => {
    const { server, kubeConfig } = await startFakeKube(t);
    server.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cacerts', namespace: 'istio-system' },
      data: { 'ca-cert.pem': Buffer.from('x').toString('base64') },
    });
    const store = new SecretCacertsStore({ kubeConfig, namespace: 'istio-system' });
    assert.equal(await store.load(), undefined);
    server.failNext(1, 500);
    await assert.rejects(store.load(), /Secret istio-system\/cacerts/);
  },
);
