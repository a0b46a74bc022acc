import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildInputSnapshot, canonicalJson, snapshotEncoding, type InputSnapshot } from '@meshrelay/api';
import { IncrementalTranslator, createIstioValidator, translate, type ProducedOutput, type TranslationInput, type TranslationResult } from '../src/index.ts';
import { CLUSTERS, ChangeWorld, seededRandom } from './change-world.ts';

const validator = createIstioValidator();
const SEED = 0x1c0ffee;
const STEPS = 400;

function securityText(outputs: ReadonlyMap<string, readonly ProducedOutput[]>): string {
  return canonicalJson([...outputs].sort(([a], [b]) => (a < b ? -1 : 1)).map(([source, list]) => [source, list.map((o) => [o.cluster, o.resource])]));
}

/** Asserts the engine's result equals the full recompute's: outputs byte for byte, problems, statuses, security outputs. */
function assertSameResult(engine: TranslationResult, full: TranslationResult, context: string): void {
  assert.deepEqual([...engine.outputs.keys()], [...full.outputs.keys()], `${context}: output clusters`);
  for (const [cluster, expected] of full.outputs) {
    const actual = engine.outputs.get(cluster);
    assert.equal(actual?.hash, expected.hash, `${context}: hash of ${cluster}`);
    assert.equal(actual && snapshotEncoding(actual), snapshotEncoding(expected), `${context}: bytes of ${cluster}`);
    assert.equal(actual?.bytes, expected.bytes, `${context}: size of ${cluster}`);
    assert.deepEqual(actual?.provenance, expected.provenance, `${context}: provenance of ${cluster}`);
  }
  assert.deepEqual(engine.problems, full.problems, `${context}: problems`);
  assert.deepEqual(engine.statuses, full.statuses, `${context}: statuses`);
  assert.equal(securityText(engine.securityOutputs), securityText(full.securityOutputs), `${context}: security outputs`);
}

describe('IncrementalTranslator', () => {
  it('given a seeded random sequence of changes, when the engine runs after each, then its result equals a full translate() of the same inputs', async () => {
    const random = seededRandom(SEED);
    const world = new ChangeWorld(random);
    const engine = new IncrementalTranslator(validator);
    const snapshots = new Map<string, InputSnapshot>();
    let generation = 0;
    const rebuild = (cluster: string): void => {
      generation += 1;
      snapshots.set(cluster, buildInputSnapshot({ cluster, epoch: 'prop', generation, resources: world.resourcesOf(cluster) }));
    };
    for (const cluster of CLUSTERS) rebuild(cluster);
    let previous: TranslationResult | undefined;
    for (let step = 0; step < STEPS; step++) {
      const change = step === 0 ? { what: 'start', touched: [] } : world.change();
      for (const cluster of change.touched) rebuild(cluster);
      // Now and then every snapshot is rebuilt (new objects, same hashes), as after a reload from the store.
      if (random() < 0.05) for (const cluster of CLUSTERS) rebuild(cluster);
      const present = CLUSTERS.filter((c) => world.clusters.get(c)?.present);
      const input: TranslationInput = {
        inputs: new Map(present.map((c) => [c, snapshots.get(c) as InputSnapshot])),
        clusters: [...world.registry.values()],
        vips: new Map(world.vips),
        previousSecurityOutputs: previous?.securityOutputs ?? new Map(),
      };
      const context = `seed ${SEED.toString(16)} step ${step} (${change.what})`;
      try {
        const result = await engine.run(input);
        assertSameResult(result, translate(input, validator), context);
        previous = result;
      } catch (err) {
        process.stderr.write(`incremental translation property failed: ${context}\n`);
        throw err;
      }
    }
  });
});
