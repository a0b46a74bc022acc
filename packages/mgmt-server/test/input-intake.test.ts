import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import {
  buildInputSnapshot,
  computeDelta,
  resolveDelta,
  type AssembledSnapshot,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { createFileClusterRegistry } from '@meshrelay/registry';
import { createMemorySnapshotStore, type SnapshotStore } from '@meshrelay/store';
import { buildGloo, buildNode, buildService } from '@meshrelay/testkit';
import { InputJudgements, validateInputResources } from '@meshrelay/translator';
import { InputIntake, isUnjudged, judgeStoredInputs } from '../src/input-intake.ts';

const CLUSTER = 'cluster-a';
const LIMITS = { maxBytes: 64 * 1024 * 1024, maxResources: 100_000 };
const logger = pino({ level: 'silent' });

function services(count: number, port = 80): Resource[] {
  return Array.from({ length: count }, (_, i) =>
    buildService({ name: `svc-${String(i).padStart(3, '0')}`, namespace: 'shop', ports: [{ name: 'http', port }] }),
  );
}

interface Setup {
  readonly intake: InputIntake;
  /** Resources the validator was handed, over all calls. */
  readonly judged: Resource[];
  readonly held: InputSnapshot;
}

/** An intake over a real memory store (or `wrap` of it) and file registry, holding generation 1 of `resources`. */
async function intakeHolding(
  t: TestContext,
  resources: readonly Resource[],
  wrap: (store: SnapshotStore) => SnapshotStore = (store) => store,
): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-intake-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const registry = await createFileClusterRegistry({ dir, tokenTtlSeconds: 3600, tokenOverlapSeconds: 60, logger });
  t.after(() => registry.close());
  await registry.register(CLUSTER, {});
  const store = wrap(createMemorySnapshotStore());
  t.after(() => store.close());
  const judged: Resource[] = [];
  const intake = new InputIntake(store, registry, logger, {
    validate: (batch) => {
      judged.push(...batch);
      return validateInputResources(batch);
    },
  });
  const first = buildInputSnapshot({ cluster: CLUSTER, epoch: 'e1', generation: 1, resources });
  const { snapshot: held } = await intake.accept(CLUSTER, {
    epoch: 'e1',
    generation: 1,
    hash: first.hash,
    resources: fresh(resources),
    provenance: [],
  });
  judged.length = 0;
  return { intake, judged, held };
}

/** New plain objects equal to `resources`, as a full snapshot off the wire gives. */
function fresh(resources: readonly Resource[]): Resource[] {
  return resources.map((r) => JSON.parse(JSON.stringify(r)) as Resource);
}

function full(resources: readonly Resource[], generation: number): AssembledSnapshot {
  const built = buildInputSnapshot({ cluster: CLUSTER, epoch: 'e1', generation, resources });
  return { epoch: 'e1', generation, hash: built.hash, resources: fresh(resources), provenance: [] };
}

test('intake: given a held input, when a delta changing one resource is applied and accepted, then only that resource is validated', async (t) => {
  const before = [buildNode({ name: 'node-1', zone: 'z1' }), ...services(40)];
  const { intake, judged, held } = await intakeHolding(t, before);
  const after = [...before];
  after[5] = buildService({ name: 'svc-004', namespace: 'shop', ports: [{ name: 'http', port: 8080 }] });
  const delta = await computeDelta(held.resources, after);
  const announced = full(after, 2);
  const assembled = await resolveDelta(
    {
      ...announced,
      resources: fresh(delta.upserts),
      delta: { baseHash: held.hash, payloadHash: '', deletedKeys: [...delta.deletedKeys] },
    },
    held,
    LIMITS,
  );
  const result = await intake.accept(CLUSTER, assembled);
  assert.deepEqual(
    judged.map((r) => r.metadata.name),
    ['svc-004'],
  );
  assert.equal(result.snapshot.hash, announced.hash);
  assert.equal(result.changed, true);
});

test('intake: given a held input, when the agent sends it full again with one resource changed, then only that one is validated and the others are the held copies', async (t) => {
  const before = services(30);
  const { intake, judged, held } = await intakeHolding(t, before);
  const after = [...before];
  after[0] = buildService({ name: 'svc-000', namespace: 'shop', ports: [{ name: 'http', port: 9090 }] });
  const sent = full(after, 2);
  const result = await intake.accept(CLUSTER, sent);
  assert.deepEqual(
    judged.map((r) => r.metadata.name),
    ['svc-000'],
  );
  assert.equal(result.snapshot.hash, sent.hash);
  assert.equal(
    result.snapshot.resources.slice(1).every((r, i) => r === held.resources[i + 1]),
    true,
  );
});

test('intake: given a held input, when a full snapshot brings an invalid changed resource, then that one alone is refused and the unchanged ones stay', async (t) => {
  const before = services(10);
  const { intake, judged } = await intakeHolding(t, before);
  const after = [...before];
  after[3] = buildService({ name: 'svc-003', namespace: 'shop', ports: [{ name: 'http', port: 70000 }] });
  const result = await intake.accept(CLUSTER, full(after, 2));
  assert.deepEqual(
    judged.map((r) => r.metadata.name),
    ['svc-003'],
  );
  assert.equal(result.warnings.length, 1);
  assert.match(result.warnings[0] ?? '', /svc-003/);
  assert.deepEqual(
    result.snapshot.resources.map((r) => r.metadata.name),
    before.filter((_, i) => i !== 3).map((r) => r.metadata.name),
  );
});

test('intake: given a held input, when a delta removes a run of resources and adds others between the held ones, then only the added ones are validated and the result is the announced snapshot', async (t) => {
  const before = services(40);
  const { intake, judged, held } = await intakeHolding(t, before);
  // Ten removed in a row (more than the matcher looks ahead), one added among the held ones, one at the end.
  const after = [
    ...before.slice(0, 10),
    ...before.slice(20, 25),
    buildService({ name: 'svc-024a', namespace: 'shop', ports: [{ name: 'http', port: 8080 }] }),
    ...before.slice(25),
    buildService({ name: 'zz-last', namespace: 'shop', ports: [{ name: 'http', port: 8080 }] }),
  ];
  const delta = await computeDelta(held.resources, after);
  const announced = full(after, 2);
  const assembled = await resolveDelta(
    {
      ...announced,
      resources: fresh(delta.upserts),
      delta: { baseHash: held.hash, payloadHash: '', deletedKeys: [...delta.deletedKeys] },
    },
    held,
    LIMITS,
  );
  const result = await intake.accept(CLUSTER, assembled);
  assert.deepEqual(judged.map((r) => r.metadata.name).sort(), ['svc-024a', 'zz-last']);
  assert.equal(result.snapshot.hash, announced.hash);
  const kept = new Set(held.resources);
  assert.equal(
    result.snapshot.resources.filter((r) => kept.has(r)).length,
    30,
    'the 30 unchanged resources are the held copies',
  );
});

/**
 * `store` whose input writes, once `hold()` was called, resolve only when `release()` is called (a slow Redis write).
 */
function slowWrites(store: SnapshotStore): SnapshotStore & { hold(): void; release(): void; readonly pending: number } {
  let held = false;
  const waiting: (() => void)[] = [];
  const extra = {
    hold: () => void (held = true),
    release: () => waiting.splice(0).forEach((resolve) => resolve()),
    get pending() {
      return waiting.length;
    },
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop in extra) return Reflect.get(extra, prop);
      if (prop === 'putInput') {
        return async (snapshot: InputSnapshot) => {
          const written = target.putInput(snapshot);
          if (held) await new Promise<void>((resolve) => waiting.push(resolve));
          await written;
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as SnapshotStore & { hold(): void; release(): void; readonly pending: number };
}

test('intake: given a changed snapshot whose write to the shared cache is slow, then `stored` is told while the write is pending, with memory already holding the new input', async (t) => {
  let store: ReturnType<typeof slowWrites> | undefined;
  const before = services(5);
  const { intake } = await intakeHolding(t, before, (s) => (store = slowWrites(s)));
  const gate = store as ReturnType<typeof slowWrites>;
  gate.hold();
  const after = [...before];
  after[1] = buildService({ name: 'svc-001', namespace: 'shop', ports: [{ name: 'http', port: 8443 }] });
  const sent = full(after, 2);
  const seen: string[] = [];
  let settled = false;
  const accepted = intake
    .accept(CLUSTER, sent, (snapshot) => {
      seen.push(snapshot.hash, gate.memoryInputs().get(CLUSTER)?.hash ?? 'none');
    })
    .then((r) => ((settled = true), r));
  while (gate.pending === 0) await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, [sent.hash, sent.hash], 'told once, with the new input in memory');
  assert.equal(settled, false, 'accept waits for the write');
  gate.release();
  const result = await accepted;
  assert.equal(result.changed, true);
  assert.equal(result.snapshot.hash, sent.hash);
});

test('intake: given the held input sent again (same epoch and generation), then `stored` is not told (nothing to translate)', async (t) => {
  const before = services(5);
  const { intake, held } = await intakeHolding(t, before);
  let told = 0;
  const result = await intake.accept(CLUSTER, { ...full(before, 1), hash: held.hash }, () => told++);
  assert.equal(result.changed, false);
  assert.equal(told, 0);
});

test('intake: given the held content from a restarted agent (new epoch), then `stored` is told with the new epoch (provenance names it)', async (t) => {
  const before = services(5);
  const { intake, held } = await intakeHolding(t, before);
  const told: string[] = [];
  const result = await intake.accept(CLUSTER, { ...full(before, 1), epoch: 'e2', hash: held.hash }, (snapshot) =>
    told.push(`${snapshot.epoch}/${snapshot.generation}`),
  );
  assert.equal(result.changed, false);
  assert.deepEqual(told, ['e2/1']);
});

test('intake: given clean snapshots, when accepted full and then as a delta, then each list is recorded as judged and translation does not judge it again', async (t) => {
  const before = [buildNode({ name: 'node-1', zone: 'z1' }), ...services(10)];
  const { intake, held } = await intakeHolding(t, before);
  assert.ok(intake.judgements.isClean(held.resources), 'a full snapshot whose every resource passed');
  const after = [...before];
  after[3] = buildService({ name: 'svc-002', namespace: 'shop', ports: [{ name: 'http', port: 8080 }] });
  const delta = await computeDelta(held.resources, after);
  const announced = full(after, 2);
  const assembled = await resolveDelta(
    {
      ...announced,
      resources: fresh(delta.upserts),
      delta: { baseHash: held.hash, payloadHash: '', deletedKeys: [...delta.deletedKeys] },
    },
    held,
    LIMITS,
  );
  const { snapshot } = await intake.accept(CLUSTER, assembled);
  assert.ok(intake.judgements.isClean(snapshot.resources), 'the held resources were clean and the changed one passed');
});

test('intake: given a Gloo resource kept despite an invalid spec, then its list is not recorded as judged, nor a later one that keeps it', async (t) => {
  const policy = buildGloo('AccessPolicy', {
    name: 'ap',
    namespace: 'shop',
    spec: { config: { authz: { allowedHosts: ['x'] } } },
  });
  const before = [policy, ...services(5)];
  const { intake, held } = await intakeHolding(t, before);
  assert.ok(
    held.resources.some((r) => r.kind === 'AccessPolicy'),
    'carried so translation reports it INVALID',
  );
  assert.ok(!intake.judgements.isClean(held.resources));
  const after = [...before];
  after[1] = buildService({ name: 'svc-000', namespace: 'shop', ports: [{ name: 'http', port: 8080 }] });
  const { snapshot } = await intake.accept(CLUSTER, full(after, 2));
  assert.ok(
    !intake.judgements.isClean(snapshot.resources),
    'only the changed Service was judged; the kept policy still has problems',
  );
});

test('judgeStoredInputs: given stored inputs no intake judged, then clean ones are recorded, ones with problems are left to translation, and neither is judged twice', async () => {
  const clean = buildInputSnapshot({ cluster: 'a', epoch: 'e', generation: 1, resources: services(3) });
  const policy = buildGloo('AccessPolicy', {
    name: 'ap',
    namespace: 'shop',
    spec: { config: { authz: { allowedHosts: ['x'] } } },
  });
  const flawed = buildInputSnapshot({ cluster: 'b', epoch: 'e', generation: 1, resources: [policy] });
  const judgements = new InputJudgements();
  assert.ok(isUnjudged(clean, judgements) && isUnjudged(flawed, judgements));
  await judgeStoredInputs([clean, flawed], judgements);
  assert.ok(judgements.isClean(clean.resources));
  assert.ok(!judgements.isClean(flawed.resources));
  assert.ok(!isUnjudged(clean, judgements) && !isUnjudged(flawed, judgements));
  assert.ok(isUnjudged(clean, new InputJudgements()), "another owner's judgements know nothing of these lists");
});
