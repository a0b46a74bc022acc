import type { Logger } from 'pino';
import {
  LoopSlicer,
  MeshrelayError,
  buildInputSnapshotInSlices,
  formatResourceKey,
  type AssembledSnapshot,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';
import type { InputVersion, SnapshotStore } from '@meshrelay/store';
import { validateInputResources, type InputValidationResult } from '@meshrelay/translator';
import type { ClusterRegistry } from '@meshrelay/registry';

export interface IntakeResult {
  readonly snapshot: InputSnapshot;
  /** Resources refused one by one (their neighbours were kept). */
  readonly warnings: readonly string[];
  /** False when the content equals what was already held (nothing to translate). */
  readonly changed: boolean;
}

/** Resources validated between two checks of the slice budget. */
const VALIDATION_BATCH = 64;

/**
 * validateInputResources in batches, giving the event loop a turn every ~20 ms
 * (each resource is judged on its own, so batching changes nothing).
 */
async function validateInSlices(resources: readonly Resource[], slicer: LoopSlicer): Promise<InputValidationResult> {
  const valid: Resource[] = [];
  const rejected: InputValidationResult['rejected'][number][] = [];
  for (let i = 0; i < resources.length; i += VALIDATION_BATCH) {
    const batch = validateInputResources(resources.slice(i, i + VALIDATION_BATCH));
    valid.push(...batch.valid);
    rejected.push(...batch.rejected);
    if (slicer.due()) await slicer.yield();
  }
  return { valid, rejected };
}

/**
 * Accepts an assembled input snapshot for a cluster whose identity was already
 * established: drops invalid resources one by one (reported as warnings), refuses
 * an older generation of the same agent epoch, stores the snapshot, and marks the
 * cluster warm on its first snapshot. A refused snapshot leaves the previous one
 * in place. Validation and canonical encoding run in slices (a 16 MiB snapshot
 * takes seconds of both), so relay heartbeats and the HTTP API keep answering.
 */
export class InputIntake {
  readonly #store: SnapshotStore;
  readonly #registry: ClusterRegistry;
  readonly #logger: Logger;

  constructor(store: SnapshotStore, registry: ClusterRegistry, logger: Logger) {
    this.#store = store;
    this.#registry = registry;
    this.#logger = logger;
  }

  /**
   * Takes an agent's word that it still holds the snapshot `claimed` names, when the store holds
   * exactly that input for the cluster (same epoch, generation and hash) — learnt from the store's
   * version, without reading or decoding the snapshot. Resolves the held version (the cluster is
   * then marked warm as for an accepted snapshot, and nothing is stored), or undefined when the
   * store holds anything else or cannot tell: the caller then needs the snapshot itself.
   */
  async resume(cluster: string, claimed: Pick<InputVersion, 'epoch' | 'generation' | 'hash'>): Promise<InputVersion | undefined> {
    const held = await this.#store.inputVersion(cluster);
    if (!held || held.epoch !== claimed.epoch || held.generation !== claimed.generation || held.hash !== claimed.hash) return undefined;
    await this.#markWarm(cluster);
    return held;
  }

  async #markWarm(cluster: string): Promise<void> {
    await this.#registry.setCondition(cluster, {
      type: 'ClusterWarm',
      status: 'True',
      reason: 'FirstSnapshotReceived',
      message: 'an input snapshot was received',
    });
  }

  async accept(cluster: string, assembled: AssembledSnapshot): Promise<IntakeResult> {
    const slicer = new LoopSlicer();
    const { valid, rejected } = await validateInSlices(assembled.resources, slicer);
    const warnings = rejected.map(
      (r) => `${formatResourceKey(r.key)}: ${r.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
    const held = this.#store.memoryInputs().get(cluster) ?? (await this.#store.getInput(cluster));
    if (held && held.epoch === assembled.epoch && held.generation >= assembled.generation && held.hash !== assembled.hash) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_STALE',
        `generation ${assembled.generation} of epoch ${assembled.epoch} is not newer than the held generation ${held.generation}`,
      );
    }
    const snapshot = await buildInputSnapshotInSlices({ cluster, epoch: assembled.epoch, generation: assembled.generation, resources: valid }, slicer);
    const changed = held?.hash !== snapshot.hash;
    if (changed || held?.generation !== snapshot.generation || held.epoch !== snapshot.epoch) {
      await this.#store.putInput(snapshot);
    }
    await this.#markWarm(cluster);
    if (warnings.length > 0) this.#logger.warn({ cluster, generation: snapshot.generation, warnings }, 'input resources refused');
    return { snapshot, warnings, changed };
  }
}
