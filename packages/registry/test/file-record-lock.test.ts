// The state directory's per-record lock: a lock left by a dead process is taken over, a live
// holder makes a write wait and then fail with a clear error (the record untouched), and two
// registries registering one name at once end with one registration.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import type { ClusterRegistry } from '../src/cluster-registry.ts';
import { createFileClusterRegistry, type FileRegistryOptions } from '../src/file-cluster-registry.ts';

function stateDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function fileRegistry(t: TestContext, dir: string, lock?: FileRegistryOptions['lock']): Promise<ClusterRegistry> {
  const registry = await createFileClusterRegistry({
    dir,
    tokenTtlSeconds: 3600,
    tokenOverlapSeconds: 60,
    logger: pino({ level: 'silent' }),
    ...(lock ? { lock } : {}),
  });
  t.after(() => registry.close());
  return registry;
}

function writeLock(dir: string, name: string, pid: number): string {
  mkdirSync(join(dir, 'locks'), { recursive: true });
  const path = join(dir, 'locks', `${name}.lock`);
  writeFileSync(path, JSON.stringify({ pid, host: hostname(), since: new Date().toISOString() }));
  return path;
}

function skipWarmingOnDisk(dir: string, name: string): unknown {
  return (JSON.parse(readFileSync(join(dir, 'clusters', `${name}.json`), 'utf8')) as { spec: Record<string, unknown> })
    .spec['skipWarming'];
}

test(
  'given a lock left by a process that has exited, when a registry writes the record, then it takes the lock over and writes',
  { timeout: 60_000 },
  async (t) => {
    const dir = stateDir(t);
    const registry = await fileRegistry(t, dir);
    await registry.register('east', {});
    const exited = spawnSync(process.execPath, ['-e', '']).pid;
    const lock = writeLock(dir, 'east', exited);
    await registry.update('east', { skipWarming: true });
    assert.equal(skipWarmingOnDisk(dir, 'east'), true);
    assert.equal(existsSync(lock), false, 'the lock is released after the write');
  },
);

test(
  'given a lock held by a live process, when a registry writes the record, then it fails with UNAVAILABLE naming the lock and leaves the record',
  { timeout: 60_000 },
  async (t) => {
    const dir = stateDir(t);
    const registry = await fileRegistry(t, dir, { waitMs: 300 });
    await registry.register('east', {});
    const lock = writeLock(dir, 'east', process.pid);
    await assert.rejects(
      registry.update('east', { skipWarming: true }),
      (err: unknown) =>
        err instanceof MeshrelayError &&
        err.code === 'MESHRELAY_ERR_UNAVAILABLE' &&
        err.message.includes(lock) &&
        err.message.includes(`process ${process.pid}`),
    );
    assert.equal(skipWarmingOnDisk(dir, 'east'), false);
    rmSync(lock);
    await registry.update('east', { skipWarming: true });
    assert.equal(skipWarmingOnDisk(dir, 'east'), true);
  },
);

test(
  'given two registries on one directory, when both register the same name at once, then exactly one succeeds and the other answers CLUSTER_EXISTS',
  { timeout: 60_000 },
  async (t) => {
    const dir = stateDir(t);
    const a = await fileRegistry(t, dir);
    const b = await fileRegistry(t, dir);
    for (let i = 0; i < 8; i++) {
      const outcomes = await Promise.allSettled([a.register(`twin-${i}`, {}), b.register(`twin-${i}`, {})]);
      const ok = outcomes.filter((o) => o.status === 'fulfilled');
      assert.equal(ok.length, 1, `try ${i}: one registration`);
      const refused = outcomes.find((o) => o.status === 'rejected');
      assert.ok(
        refused?.reason instanceof MeshrelayError && refused.reason.code === 'MESHRELAY_ERR_CLUSTER_EXISTS',
        `try ${i}: the other is told the name is taken`,
      );
    }
  },
);
