/**
 * The mesh trust service on an injected clock, against real stores in a temp directory: a tick
 * decides from `now()` alone, so old-root leaves valid for 400 days hold phase 2 exactly until the
 * clock passes them — no timer waits for them.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import type { KubernetesCluster } from '@meshrelay/api';
import { FileCaStore } from '@meshrelay/certs';
import { DirectoryDocumentStore, parseRootTrustPolicy, type RootTrustPolicyState } from '@meshrelay/registry';
import { MeshRoots } from '../src/mesh-trust/mesh-roots.ts';
import { MeshTrustService } from '../src/mesh-trust/mesh-trust-service.ts';
import { TrustRecords } from '../src/mesh-trust/trust-records.ts';
import { tempDir } from './mesh-trust-harness.ts';

const DAY = 86_400_000;

function policyState(): RootTrustPolicyState {
  const parsed = parseRootTrustPolicy({
    metadata: { name: 'root', namespace: 'gloo-mesh' },
    spec: { config: { mgmtServerCa: { generated: { rsaKeySizeBytes: 2048 } } } },
  });
  assert.ok('value' in parsed);
  return { policy: parsed.value, problems: [], served: true };
}

function serviceOn(dir: string, now: () => Date): MeshTrustService {
  const policy = policyState();
  return new MeshTrustService({
    records: new TrustRecords(new DirectoryDocumentStore(join(dir, 'mesh-trust'))),
    roots: new MeshRoots((i) => new FileCaStore(join(dir, `root-${i}`))),
    policy: () => policy,
    registry: { list: () => [{ metadata: { name: 'east' } } as KubernetesCluster] },
    logger: pino({ level: 'silent' }),
    now,
    tickMs: 60_000,
  });
}

test(
  'given old-root leaves valid for 400 days, then phase 2 holds until the injected clock passes them',
  { timeout: 60_000 },
  async (t) => {
    const dir = tempDir(t, 'meshrelay-trust-svc-');
    let clock = new Date('2026-01-01T00:00:00Z');
    const service = serviceOn(dir, () => clock);
    await service.start();
    t.after(() => service.stop());
    const report = (leavesUntilMs = 0) =>
      service.handle('east', {
        trustDomain: 'cluster.local',
        appliedGeneration: service.view().state?.generation ?? 0,
        oldRootLeafNotAfterUnixMs: leavesUntilMs,
      });

    await service.rotate();
    await report();
    await service.tick();
    assert.equal(service.view().state?.phase, 2);
    const leavesUntil = clock.getTime() + 400 * DAY;
    await report(leavesUntil);

    clock = new Date(leavesUntil - 1000);
    await service.tick();
    assert.equal(service.view().state?.phase, 2);
    assert.deepEqual(service.view().holds, [{ kind: 'old-root-leaves', until: new Date(leavesUntil).toISOString() }]);

    clock = new Date(leavesUntil + 1000);
    await service.tick();
    assert.equal(service.view().state?.phase, 3);
    assert.equal(service.view().state?.since, clock.toISOString());
  },
);

test(
  'given a cluster repeating one report, then it is stored again only once a minute',
  { timeout: 60_000 },
  async (t) => {
    const dir = tempDir(t, 'meshrelay-trust-svc-');
    let clock = new Date('2026-01-01T00:00:00Z');
    const service = serviceOn(dir, () => clock);
    await service.start();
    t.after(() => service.stop());
    const documents = new DirectoryDocumentStore(join(dir, 'mesh-trust'));
    const revision = async () => (await documents.list()).find((d) => d.name === 'cluster.east')?.revision;
    const report = (appliedGeneration: number) =>
      service.handle('east', { trustDomain: 'cluster.local', appliedGeneration });

    await report(1);
    const first = await revision();
    assert.ok(first !== undefined);
    clock = new Date(clock.getTime() + 30_000);
    await report(1);
    assert.equal(await revision(), first, 'the same report 30 s later is not written');
    await report(0);
    const changed = await revision();
    assert.notEqual(changed, first, 'a changed report is written at once');
    clock = new Date(clock.getTime() + 61_000);
    await report(0);
    assert.notEqual(await revision(), changed, 'the same report a minute later refreshes its time');
  },
);
