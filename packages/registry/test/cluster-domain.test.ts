// Defence in depth: a clusterDomain or trustDomain that is not a DNS name never enters the registry, whoever
// writes it — a caller of the registry, an edited state-directory file, or a CR applied with
// kubectl (the fake kube-apiserver, a test double from @meshrelay/testkit, checks no schema).
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { createFileClusterRegistry } from '../src/index.ts';
import { NS, clusterCr, startFakeKube, startKubeRegistry } from './kube-harness.ts';

const EVIL = 'evil domain\n<b>x</b>';

function refusedNaming(field: string) {
  return (err: unknown) =>
    err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_ARGUMENT' && err.message.includes(field);
}

async function fileRegistry(t: TestContext) {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-registry-'));
  const logs: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => logs.push(line) });
  const registry = await createFileClusterRegistry({ dir, tokenTtlSeconds: 3600, tokenOverlapSeconds: 60, logger });
  t.after(async () => {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { dir, registry, logs };
}

for (const field of ['clusterDomain', 'trustDomain'] as const) {
  test(`given a file registry, when a cluster is registered or updated with a ${field} that is not a DNS name, then it is refused naming spec.${field}`, async (t) => {
    const { registry } = await fileRegistry(t);
    await assert.rejects(registry.register('east', { [field]: EVIL }), refusedNaming(`spec.${field}`));
    assert.equal(registry.get('east'), undefined);
    await registry.register('west', { [field]: 'west.local' });
    await assert.rejects(registry.update('west', { [field]: EVIL }), refusedNaming(`spec.${field}`));
    assert.equal(registry.get('west')?.spec[field], 'west.local');
  });

  test(`given a file registry, when a record file is edited to carry markup in ${field}, then the previous copy stays and the error names the field`, async (t) => {
    const { dir, registry, logs } = await fileRegistry(t);
    await registry.register('east', { [field]: 'east.local' });
    const file = join(dir, 'clusters', 'east.json');
    const record = JSON.parse(await readFile(file, 'utf8')) as { spec: Record<string, unknown> };
    await writeFile(file, JSON.stringify({ ...record, spec: { ...record.spec, [field]: EVIL } }));
    await waitFor(() => logs.some((l) => l.includes(`spec.${field} must be a DNS name`)), {
      timeoutMs: 10_000,
      message: 'the refusal to be logged',
    });
    assert.equal(registry.get('east')?.spec[field], 'east.local');
  });

  test(`given a kubernetes registry, when a CR with markup in ${field} is applied, then it is ignored and a later valid CR is taken`, async (t) => {
    const fake = await startFakeKube(t);
    const registry = await startKubeRegistry(t, fake);
    fake.put(clusterCr('east', { [field]: EVIL }));
    fake.put(clusterCr('north', { [field]: 'north.local' }));
    await waitFor(() => registry.get('north') !== undefined, { message: 'the valid CR to be seen' });
    assert.equal(registry.get('east'), undefined);
    await assert.rejects(registry.register('west', { [field]: EVIL }), refusedNaming(`spec.${field}`));
    assert.equal(fake.get('KubernetesCluster', 'west', NS), undefined);
    await assert.rejects(registry.update('north', { [field]: EVIL }), refusedNaming(`spec.${field}`));
    assert.equal(registry.get('north')?.spec[field], 'north.local');
  });

  test(`given a kubernetes registry, when a cluster is registered and updated with a valid ${field}, then the CR carries it and it is read back`, async (t) => {
    const fake = await startFakeKube(t);
    const registry = await startKubeRegistry(t, fake);
    await registry.register('west', { [field]: 'west.example' });
    const spec = () =>
      (fake.get('KubernetesCluster', 'west', NS) as { spec?: Record<string, unknown> } | undefined)?.spec;
    assert.equal(spec()?.[field], 'west.example');
    await registry.update('west', { [field]: 'west.example.org' });
    assert.equal(spec()?.[field], 'west.example.org');
    assert.equal(registry.get('west')?.spec[field], 'west.example.org');
  });
}
