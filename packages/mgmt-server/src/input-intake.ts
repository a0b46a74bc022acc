import type { Logger } from 'pino';
import {
  LoopSlicer,
  MeshrelayError,
  buildInputSnapshotInSlices,
  carryCheckpoints,
  canonicalJson,
  canonicalResource,
  formatResourceKey,
  resourceEncoding,
  resourceId,
  type AssembledSnapshot,
  type InputSnapshot,
  type InputSnapshotInit,
  type Resource,
} from '@meshrelay/api';
import type { InputVersion, SnapshotStore } from '@meshrelay/store';
import {
  InputJudgements,
  judgedClean,
  validateInputResources,
  type InputValidationResult,
} from '@meshrelay/translator';
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

/** Judges input resources one by one; the translator's validateInputResources unless a test counts calls. */
export type InputValidator = (resources: readonly Resource[]) => InputValidationResult;

/**
 * Validates in batches, giving the event loop a turn every ~20 ms
 * (each resource is judged on its own, so batching changes nothing).
 */
async function validateInSlices(
  resources: readonly Resource[],
  validate: InputValidator,
  slicer: LoopSlicer,
): Promise<InputValidationResult> {
  const valid: Resource[] = [];
  const rejected: InputValidationResult['rejected'][number][] = [];
  const carried: Resource[] = [];
  for (let i = 0; i < resources.length; i += VALIDATION_BATCH) {
    const batch = validate(resources.slice(i, i + VALIDATION_BATCH));
    valid.push(...batch.valid);
    rejected.push(...batch.rejected);
    carried.push(...batch.carried);
    if (slicer.due()) await slicer.yield();
  }
  return { valid, rejected, carried };
}

/** Whether `judgements` holds no verdict on `input`'s resources (see judgeStoredInputs). */
export function isUnjudged(input: InputSnapshot, judgements: InputJudgements): boolean {
  return !judgements.isJudged(input.resources);
}

/**
 * Validates every resource of stored inputs that `judgements` holds no verdict on (an input
 * loaded from Redis after a restart, or written there by another replica), in slices, and
 * records the verdicts, so translation does not judge the clean lists again. A list with a
 * problem is left to translation, which reports it.
 */
export async function judgeStoredInputs(
  inputs: Iterable<InputSnapshot>,
  judgements: InputJudgements,
  slicer = new LoopSlicer(),
): Promise<void> {
  for (const input of inputs) {
    if (!isUnjudged(input, judgements)) continue;
    const result = await validateInSlices(input.resources, validateInputResources, slicer);
    judgements.record(input.resources, judgedClean(result));
  }
}

/**
 * Finds, for an incoming resource, the resource of the held snapshot it equals: the same object
 * (a delta applied to the held snapshot shares its unchanged resources) or, for a full snapshot,
 * the held resource of the same key whose canonical encoding is the incoming one's. The held
 * snapshot holds only resources that passed validation, and validation judges each resource on
 * its own, so an equal resource needs neither validation nor a new canonical copy.
 */
class HeldMatcher {
  readonly #held: readonly Resource[];
  /** Where in the held list the next incoming resource is looked for first. */
  #next = 0;
  #objects: Set<Resource> | undefined;
  #byId: Map<string, Resource> | undefined;

  constructor(held: readonly Resource[]) {
    this.#held = held;
  }

  /**
   * Incoming resources are best asked for in the held order: after a delta they are the held
   * objects in that order with the few the delta changed in between, and each is then found by
   * a look at the next few held entries instead of through sets of the whole held snapshot.
   */
  match(r: Resource): Resource | undefined {
    try {
      const inOrder = this.#inOrder(r);
      return inOrder ? inOrder.found : this.#anywhere(r);
    } catch {
      // A malformed resource (no metadata, a value JSON cannot carry) is validation's to report.
      return undefined;
    }
  }

  /** `match` for a resource at (or a few entries after) the next held position; undefined when it is not there. */
  #inOrder(r: Resource): { found: Resource | undefined } | undefined {
    const held = this.#held;
    const end = Math.min(held.length, this.#next + IN_ORDER_LOOKAHEAD);
    for (let k = this.#next; k < end; k++) {
      if (held[k] === r) {
        this.#next = k + 1;
        return { found: r };
      }
    }
    // A resource the delta changed in place: the held entry at the position has its key.
    const here = held[this.#next];
    if (here === undefined || resourceId(here) !== resourceId(r)) return undefined;
    this.#next += 1;
    return { found: resourceEncoding(here) === canonicalJson(r) ? here : undefined };
  }

  #anywhere(r: Resource): Resource | undefined {
    this.#objects ??= new Set(this.#held);
    if (this.#objects.has(r)) return r;
    this.#byId ??= new Map(this.#held.map((h) => [resourceId(h), h] as const));
    const held = this.#byId.get(resourceId(r));
    return held !== undefined && resourceEncoding(held) === canonicalJson(r) ? held : undefined;
  }
}

/** How many held entries past the expected position `HeldMatcher` looks at (resources the delta removed in a row). */
const IN_ORDER_LOOKAHEAD = 8;

/** What validateChanged found: with `clean`, whether every kept resource passed with no problem. */
interface ChangedValidation extends InputValidationResult {
  readonly clean: boolean;
}

/**
 * Validates only the resources that differ from the held snapshot's and keeps the held copies of
 * the others, in the incoming order: the same valid resources and refusals as validating all.
 * Kept held copies are clean when the held list was recorded clean in `judgements`.
 */
async function validateChanged(
  resources: readonly Resource[],
  held: InputSnapshot | undefined,
  validate: InputValidator,
  judgements: InputJudgements,
  slicer: LoopSlicer,
): Promise<ChangedValidation> {
  if (!held) {
    const all = await validateInSlices(resources, validate, slicer);
    return { ...all, clean: judgedClean(all) };
  }
  const matcher = new HeldMatcher(held.resources);
  // Only what is not the held object itself is recorded: after a delta that is the few it changed.
  const heldCopies = new Map<Resource, Resource>();
  const changed = new Set<Resource>();
  for (const r of resources) {
    const match = matcher.match(r);
    if (!match) changed.add(r);
    else if (match !== r) heldCopies.set(r, match);
    if (slicer.due()) await slicer.yield();
  }
  const judged = await validateInSlices([...changed], validate, slicer);
  const accepted = new Set(judged.valid);
  const valid: Resource[] = [];
  for (const r of resources) {
    if (!changed.has(r)) valid.push(heldCopies.get(r) ?? r);
    else if (accepted.has(r)) valid.push(r);
  }
  const clean = judgedClean(judged) && (changed.size === resources.length || judgements.isClean(held.resources));
  return { valid, rejected: judged.rejected, carried: judged.carried, clean };
}

/**
 * The snapshot of a resolved delta whose resources all passed, without encoding and hashing
 * them again: resolveDelta checked that they are sorted and that their canonical encoding hashes
 * to the announced hash (`canonicalBytes`). Any resource that is not a canonical copy yet is
 * turned into one (same encoding, so the same hash); the push handler copies a delta's resources
 * before merging, so the list is normally the resolved one and takes its hash checkpoints.
 * Undefined when the snapshot is not such a delta's.
 */
async function adoptResolved(
  init: InputSnapshotInit,
  assembled: AssembledSnapshot,
  slicer: LoopSlicer,
): Promise<InputSnapshot | undefined> {
  if (assembled.canonicalBytes === undefined || init.resources.length !== assembled.resources.length) return undefined;
  const resources: Resource[] = [];
  for (const r of init.resources) {
    resources.push(canonicalResource(r, false));
    if (slicer.due()) await slicer.yield();
  }
  const { cluster, epoch, generation } = init;
  Object.freeze(resources);
  // The resolved list was hashed with checkpoints: the next delta against this input resumes from them.
  carryCheckpoints(assembled.resources, resources);
  return Object.freeze({
    cluster,
    epoch,
    generation,
    hash: assembled.hash,
    bytes: assembled.canonicalBytes,
    resources,
  });
}

export interface InputIntakeOptions {
  /** Where the verdicts on accepted lists are recorded, for translation (default: the intake's own). */
  readonly judgements?: InputJudgements;
  /** The translator's validateInputResources unless a test counts calls. */
  readonly validate?: InputValidator;
}

/**
 * Accepts an assembled input snapshot for a cluster whose identity was already
 * established: drops invalid resources one by one (reported as warnings), refuses
 * an older generation of the same agent epoch, stores the snapshot, and marks the
 * cluster warm on its first snapshot. A refused snapshot leaves the previous one
 * in place. Only resources that differ from the held snapshot's are validated and
 * copied; the others are the held copies. Validation and canonical encoding run in slices (a 16 MiB snapshot
 * takes seconds of both), so relay heartbeats and the HTTP API keep answering.
 */
export class InputIntake {
  readonly #store: SnapshotStore;
  readonly #registry: ClusterRegistry;
  readonly #logger: Logger;
  readonly #validate: InputValidator;
  /** The verdicts on the lists this intake accepted (and whatever else their owner recorded). */
  readonly judgements: InputJudgements;

  constructor(store: SnapshotStore, registry: ClusterRegistry, logger: Logger, options: InputIntakeOptions = {}) {
    this.#store = store;
    this.#registry = registry;
    this.#logger = logger;
    this.#validate = options.validate ?? validateInputResources;
    this.judgements = options.judgements ?? new InputJudgements();
  }

  /**
   * Takes an agent's word that it still holds the snapshot `claimed` names, when the store holds
   * exactly that input for the cluster (same epoch, generation and hash) — learnt from the store's
   * version, without reading or decoding the snapshot. Resolves the held version (the cluster is
   * then marked warm as for an accepted snapshot, and nothing is stored), or undefined when the
   * store holds anything else or cannot tell: the caller then needs the snapshot itself.
   */
  async resume(
    cluster: string,
    claimed: Pick<InputVersion, 'epoch' | 'generation' | 'hash'>,
  ): Promise<InputVersion | undefined> {
    const held = await this.#store.inputVersion(cluster);
    if (!held || held.epoch !== claimed.epoch || held.generation !== claimed.generation || held.hash !== claimed.hash)
      return undefined;
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

  /**
   * `stored` is called once a new input is in the store's memory, where translation reads it, and
   * before its write to Redis is awaited: translation need not wait for the shared cache (memory
   * is what it translates; DESIGN §5 gives inputs no durable home but the agents). New content, or
   * the same content under another agent epoch or generation (a restarted agent): provenance names
   * the input's epoch and generation, and every replica translates again when Redis tells it of
   * either, so this one does too and the replicas name the same.
   */
  async accept(
    cluster: string,
    assembled: AssembledSnapshot,
    stored?: (snapshot: InputSnapshot) => void,
  ): Promise<IntakeResult> {
    const slicer = new LoopSlicer();
    const held = this.#store.memoryInputs().get(cluster) ?? (await this.#store.getInput(cluster));
    if (
      held &&
      held.epoch === assembled.epoch &&
      held.generation >= assembled.generation &&
      held.hash !== assembled.hash
    ) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_STALE',
        `generation ${assembled.generation} of epoch ${assembled.epoch} is not newer than the held generation ${held.generation}`,
      );
    }
    const { valid, rejected, clean } = await validateChanged(
      assembled.resources,
      held,
      this.#validate,
      this.judgements,
      slicer,
    );
    const warnings = rejected.map(
      (r) => `${formatResourceKey(r.key)}: ${r.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
    const init = { cluster, epoch: assembled.epoch, generation: assembled.generation, resources: valid };
    const snapshot =
      (rejected.length === 0 ? await adoptResolved(init, assembled, slicer) : undefined) ??
      (await buildInputSnapshotInSlices(init, slicer));
    // Judged here once: translation admits the list without judging its resources again.
    if (clean) this.judgements.record(snapshot.resources, true);
    const changed = held?.hash !== snapshot.hash;
    if (changed || held?.generation !== snapshot.generation || held.epoch !== snapshot.epoch) {
      // The store's memory holds the snapshot as soon as putInput is called (SnapshotStore's contract).
      const written = this.#store.putInput(snapshot);
      stored?.(snapshot);
      await written;
    }
    await this.#markWarm(cluster);
    if (warnings.length > 0)
      this.#logger.warn({ cluster, generation: snapshot.generation, warnings }, 'input resources refused');
    return { snapshot, warnings, changed };
  }
}
