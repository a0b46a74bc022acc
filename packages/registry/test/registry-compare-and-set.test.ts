// Registry writes are compare-and-set: a replica whose copy of a record is stale applies its
// change to the record as stored, so it never overwrites a field it did not change. Both backends:
// the state directory (two registries on one directory, as two replicas on one host) and the
// Kubernetes one (two registries on the fake kube-apiserver, a test double from @meshrelay/testkit).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { waitFor } from '@meshrelay/testkit';
import type { ClusterRegistry } from '../src/cluster-registry.ts';
import { createFileClusterRegistry } from '../src/file-cluster-registry.ts';
import { NS, startFakeKube, startKubeRegistry } from './kube-harness.ts';

const logger = pino({ level: 'silent' });

function stateDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-cas-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function fileRegistry(t: TestContext, dir: string): Promise<ClusterRegistry> {
  const registry = await createFileClusterRegistry({ dir, tokenTtlSeconds: 3600, tokenOverlapSeconds: 60, logger });
  t.after(() => registry.close());
  return registry;
}

/** Revokes on `a` while `b` edits the same cluster `edits` times; the revocation must survive every edit. */
async function raceRevocationWithEdits(
  a: ClusterRegistry,
  b: ClusterRegistry,
  name: string,
  edits: number,
): Promise<string> {
  const [revoked] = await Promise.all([
    a.revoke(name),
    (async () => {
      for (let i = 0; i < edits; i++) {
        await b.update(name, { skipWarming: i % 2 === 0 });
        await b.setCondition(name, {
          type: 'ClusterWarm',
          status: i % 2 === 0 ? 'True' : 'False',
          reason: `Edit${i}`,
          message: 'edit',
        });
      }
    })(),
  ]);
  return revoked.revokedBefore.toISOString();
}

test('given two file registries on one directory, when one revokes while the other edits from a stale copy, then the mark and every edit are on disk', async (t) => {
  const dir = stateDir(t);
  const a = await fileRegistry(t, dir);
  const b = await fileRegistry(t, dir);
  for (let i = 0; i < 8; i++) {
    const name = `race-${i}`;
    await a.register(name, {});
    await waitFor(() => b.get(name) !== undefined, { message: `b to see ${name}` });
    const revokedBefore = await raceRevocationWithEdits(a, b, name, 5);
    const onDisk = JSON.parse(readFileSync(join(dir, 'clusters', `${name}.json`), 'utf8')) as {
      spec: Record<string, unknown>;
      status: { conditions: { reason: string }[] };
    };
    assert.equal(
      Date.parse(String(onDisk.spec['revokeCertificatesBefore'])),
      Date.parse(revokedBefore),
      `try ${i}: the revocation mark`,
    );
    assert.equal(onDisk.spec['skipWarming'], true, `try ${i}: b's last spec edit`);
    assert.equal(
      onDisk.status.conditions.find((c) => c.reason.startsWith('Edit'))?.reason,
      'Edit4',
      `try ${i}: b's last condition`,
    );
  }
});

test('given a record b has not re-read since a revoked it, when b updates it, then b writes its change onto the revoked record', async (t) => {
  const dir = stateDir(t);
  const a = await fileRegistry(t, dir);
  const b = await fileRegistry(t, dir);
  await a.register('east', {});
  await waitFor(() => b.get('east') !== undefined);
  const before = b.get('east');
  await a.revoke('east');
  // b's copy is the one from before the revocation (its watch has not fired, or fired late).
  assert.equal(before?.spec.revokeCertificatesBefore, undefined);
  const updated = await b.update('east', { skipWarming: true });
  assert.notEqual(updated.spec.revokeCertificatesBefore, undefined, 'the update carries the mark it found on disk');
  const onDisk = JSON.parse(readFileSync(join(dir, 'clusters', 'east.json'), 'utf8')) as {
    spec: Record<string, unknown>;
    metadata: Record<string, unknown>;
  };
  assert.notEqual(onDisk.spec['revokeCertificatesBefore'], undefined);
  assert.equal(onDisk.spec['skipWarming'], true);
  assert.equal(onDisk.metadata['resourceVersion'], '3', 'register, revoke and update each wrote one revision');
});

test('given a record edited on disk by hand, when a registry updates it, then the hand edit stays and the update is added', async (t) => {
  const dir = stateDir(t);
  const a = await fileRegistry(t, dir);
  await a.register('east', {});
  const path = join(dir, 'clusters', 'east.json');
  const record = JSON.parse(readFileSync(path, 'utf8')) as { spec: Record<string, unknown> };
  writeFileSync(path, JSON.stringify({ ...record, spec: { ...record.spec, clusterDomain: 'edited.local' } }));
  await a.update('east', { skipWarming: true });
  const onDisk = JSON.parse(readFileSync(path, 'utf8')) as { spec: Record<string, unknown> };
  assert.equal(onDisk.spec['clusterDomain'], 'edited.local');
  assert.equal(onDisk.spec['skipWarming'], true);
});

test('given two kubernetes registries, when one revokes while the other edits, then the CR keeps the mark and every edit', async (t) => {
  const fake = await startFakeKube(t);
  const a = await startKubeRegistry(t, fake);
  const b = await startKubeRegistry(t, fake);
  for (let i = 0; i < 8; i++) {
    const name = `race-${i}`;
    await a.register(name, {});
    await waitFor(() => b.get(name) !== undefined, { message: `b to see ${name}` });
    const revokedBefore = await raceRevocationWithEdits(a, b, name, 5);
    const cr = fake.get('KubernetesCluster', name, NS) as unknown as {
      spec: Record<string, unknown>;
      status: { conditions: { reason: string }[] };
    };
    assert.equal(
      Date.parse(String(cr.spec['revokeCertificatesBefore'])),
      Date.parse(revokedBefore),
      `try ${i}: the revocation mark`,
    );
    assert.equal(cr.spec['skipWarming'], true, `try ${i}: b's last spec edit`);
    assert.equal(
      cr.status.conditions.find((c) => c.reason.startsWith('Edit'))?.reason,
      'Edit4',
      `try ${i}: b's last condition`,
    );
  }
});
