// VIPs are released on positive evidence only, and a released address can be handed out again.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { VipAllocations, reconcileVips, type VipAllocation, type VipDemand } from '../src/index.ts';

const CIDR = '10.30.0.0/16';

function demand(present: Record<string, string[]>, registered: string[]): VipDemand {
  return { present: new Map(Object.entries(present)), registered: new Set(registered) };
}

function step(
  table: ReadonlyMap<string, VipAllocation>,
  present: Record<string, string[]>,
  registered: string[],
): Map<string, VipAllocation> {
  return reconcileVips(table, demand(present, registered), CIDR);
}

test('given a VIP owned by a cluster, when that cluster is absent (disconnected, restarting, held), then the VIP stays', () => {
  const first = step(new Map(), { east: ['ns/reviews'], west: [] }, ['east', 'west']);
  const absent = step(first, { west: [] }, ['east', 'west']);
  assert.equal(absent.get('ns/reviews')?.address, first.get('ns/reviews')?.address);
  assert.deepEqual(absent.get('ns/reviews')?.owners, ['east']);
});

test('given a VIP owned by a cluster, when a newer input of that cluster lacks the destination, then the VIP is released', () => {
  const first = step(new Map(), { east: ['ns/reviews'] }, ['east']);
  const next = step(first, { east: [] }, ['east']);
  assert.equal(next.has('ns/reviews'), false);
});

test('given a VIP two clusters declare, when one drops it or is deregistered, then the VIP stays until the last owner is gone', () => {
  const first = step(new Map(), { east: ['ns/reviews'], west: ['ns/reviews'] }, ['east', 'west']);
  const dropped = step(first, { east: [], west: ['ns/reviews'] }, ['east', 'west']);
  assert.deepEqual(dropped.get('ns/reviews')?.owners, ['west']);
  const westAbsent = step(dropped, { east: [] }, ['east', 'west']);
  assert.deepEqual(westAbsent.get('ns/reviews')?.owners, ['west'], 'an absent owner keeps it');
  const deregistered = step(westAbsent, { east: [] }, ['east']);
  assert.equal(deregistered.has('ns/reviews'), false);
});

test('given an allocation stored without owners, when only some clusters are present, then it stays; when all are present without it, it is released', () => {
  const legacy = new Map<string, VipAllocation>([['ns/old', { address: '10.30.0.9', owners: null }]]);
  const partial = step(legacy, { east: [] }, ['east', 'west']);
  assert.deepEqual(partial.get('ns/old'), { address: '10.30.0.9', owners: null });
  const all = step(partial, { east: [], west: [] }, ['east', 'west']);
  assert.equal(all.has('ns/old'), false);
});

test('given a file store with a one-address pool, when a destination is released, then its address is handed to the next one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-vips-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'vips.json');
  const store = new VipAllocations(path, '10.30.0.7/32');
  const first = await store.reconcile(demand({ east: ['ns/a'] }, ['east']));
  assert.equal(first.get('ns/a'), '10.30.0.7');

  const next = await store.reconcile(demand({ east: ['ns/b'] }, ['east']));
  assert.deepEqual([...next], [['ns/b', '10.30.0.7']]);
  const reopened = await new VipAllocations(path, '10.30.0.7/32').reconcile(demand({}, ['east']));
  assert.deepEqual(
    [...reopened],
    [['ns/b', '10.30.0.7']],
    'the allocation and its owner survive a restart with the owner absent',
  );
});

test('given a file written in the older shape (key to address), when reconciled, then the addresses are kept and owners recorded', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-vips-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'vips.json');
  writeFileSync(path, JSON.stringify({ 'ns/a': '10.30.4.4' }));
  const vips = await new VipAllocations(path, CIDR).reconcile(demand({ east: ['ns/a'] }, ['east']));
  assert.equal(vips.get('ns/a'), '10.30.4.4');
  assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { 'ns/a': { address: '10.30.4.4', owners: ['east'] } });
});

test('given a corrupt allocation entry, when reconciled, then it fails with a code and the file is left as it was', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-vips-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'vips.json');
  writeFileSync(path, JSON.stringify({ 'ns/a': { address: 7 } }));
  await assert.rejects(new VipAllocations(path, CIDR).reconcile(demand({}, [])), { code: 'MESHRELAY_ERR_INTERNAL' });
  assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { 'ns/a': { address: 7 } });
});
