/**
 * What the translation pipeline may reuse from the run before. The pipeline asks the memo for
 * every unit of work it can skip; a one-shot translation uses `FRESH` (computes everything),
 * an incremental engine a `RunMemo` that keeps the last run's results. Either way the pipeline
 * produces the same result: a memo only ever returns a value equal in content to what the
 * computation would give, and replays the problems that computation reported, in order.
 */
import {
  buildOutputSnapshot,
  copyProvenance,
  isCanonicalResource,
  unencodedCanonicalResource,
  withProvenance,
  type OutputSnapshot,
  type Provenance,
  type Resource,
} from '@meshrelay/api';
import { ProblemSink } from './problems.ts';
import { sameContent } from './same-content.ts';
import { ScopeDecisions } from './scope-memo.ts';
import type { ScopeCache } from '../workspaces/workspace-outputs.ts';

export interface TranslationMemo {
  /**
   * The result of `compute` for `key` in `table`. A memo may return the result computed for the
   * same key in the previous run instead (replaying its problems into `problems`), so `key`
   * must name everything `compute` reads.
   */
  unit<T>(table: string, key: string, problems: ProblemSink, compute: (problems: ProblemSink) => T): T;
  /** `unit` for a computation that yields between its parts. */
  unitSteps<T>(
    table: string,
    key: string,
    problems: ProblemSink,
    compute: (problems: ProblemSink) => Generator<void, T>,
  ): Generator<void, T>;
  /** `value`, or the previous run's value of `slot` when `same` says they are equal in content. */
  keep<T>(table: string, slot: string, value: T, same: (previous: T, next: T) => boolean): T;
  /**
   * The units and kept values of `table` whose key is `group` + a short key. A caller that looks
   * up many keys under one group (one VirtualDestination in every cluster, say) builds and
   * finds the group's part of the key once, and each lookup hashes only the short key.
   */
  row(table: string, group: string): MemoRow;
  /** What `keep` stored in `slot` in the previous run (always undefined for a memo that keeps nothing). */
  last<T>(table: string, slot: string): T | undefined;
  /** An output resource, or the previous run's object of `slot` when its content is equal. */
  resource(slot: string, resource: Resource): Resource;
  /** A number naming an object for as long as it lives (for keys of identity-based reuse). */
  id(object: object): number;
  /** Where exportTo-scoped copies of outputs are kept (across runs, for an incremental engine). */
  scopes(): ScopeCache;
  /** Scoping results per output and consumer (across runs, for an incremental engine). */
  scopeDecisions(): ScopeDecisions;
  /** The output validator's verdicts on canonical outputs (across runs, for an incremental engine). */
  verdicts(): WeakMap<Resource, string[]>;
  /** The output snapshot of `cluster` (the previous one when it holds the same resources). */
  snapshot(cluster: string, resources: readonly Resource[], provenance: readonly Provenance[]): OutputSnapshot;
}

/** The entries of one group of a grouped table (see `TranslationMemo.row`). */
export interface MemoRow {
  /** `TranslationMemo.unit` for the key group + `key`. */
  unit<T>(key: string | number, problems: ProblemSink, compute: (problems: ProblemSink) => T): T;
  /** `TranslationMemo.keep` for the slot group + `key`. */
  keep<T>(key: string | number, value: T, same: (previous: T, next: T) => boolean): T;
}

/** The row of a memo that keeps nothing. */
const FRESH_ROW: MemoRow = {
  unit: (_key, problems, compute) => compute(problems),
  keep: (_key, value) => value,
};

let nextId = 1;
const ids = new WeakMap<object, number>();

function idOf(object: object): number {
  let id = ids.get(object);
  if (id === undefined) {
    id = nextId++;
    ids.set(object, id);
  }
  return id;
}

/** A memo that reuses nothing: what a one-shot `translate()` runs with. */
export const FRESH: TranslationMemo = {
  unit: (_table, _key, problems, compute) => compute(problems),
  unitSteps: (_table, _key, problems, compute) => compute(problems),
  keep: (_table, _slot, value) => value,
  row: () => FRESH_ROW,
  last: () => undefined,
  resource: (_slot, resource) => resource,
  id: idOf,
  scopes: () => new WeakMap(),
  scopeDecisions: () => new ScopeDecisions(),
  verdicts: () => new WeakMap(),
  snapshot: (cluster, resources, provenance) => buildOutputSnapshot({ cluster, resources, provenance }),
};

interface Recorded {
  readonly value: unknown;
  readonly problems: readonly ReturnType<ProblemSink['all']>[number][];
}

function canonicalOf(resource: Resource): Resource {
  return isCanonicalResource(resource) ? resource : unencodedCanonicalResource(resource).resource;
}

interface KeptSnapshot {
  readonly resources: readonly Resource[];
  readonly snapshot: OutputSnapshot;
}

/** Old and new generation of one table: what the last run used, and what this run uses. */
class Generations<V> {
  #previous = new Map<string, V>();
  #current = new Map<string, V>();

  get(key: string): V | undefined {
    return this.#current.get(key) ?? this.#previous.get(key);
  }

  set(key: string, value: V): void {
    this.#current.set(key, value);
  }

  /** The previous run's value of `key`. */
  previous(key: string): V | undefined {
    return this.#previous.get(key);
  }

  /** This run's value of `key`, made by `make` when the run has none yet. */
  claim(key: string, make: () => V): V {
    let value = this.#current.get(key);
    if (value === undefined) {
      value = make();
      this.#current.set(key, value);
    }
    return value;
  }

  /** Ends a run: entries the run did not use are forgotten. */
  turn(): void {
    this.#previous = this.#current;
    this.#current = new Map();
  }
}

/**
 * `next` as `buildOutputSnapshot` keeps it (plain copies sorted by cluster), made once per list: every cluster's output
 * has the same.
 */
const sortedProvenance = new WeakMap<readonly Provenance[], readonly Provenance[]>();

function sortedCopy(next: readonly Provenance[]): readonly Provenance[] {
  let sorted = sortedProvenance.get(next);
  if (!sorted) {
    sorted = next.map(copyProvenance).sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
    sortedProvenance.set(next, sorted);
  }
  return sorted;
}

/** Whether a snapshot's provenance is what `buildOutputSnapshot` would make of `next` (equal in every field). */
function sameProvenance(kept: readonly Provenance[], next: readonly Provenance[]): boolean {
  if (kept.length !== next.length) return false;
  const sorted = sortedCopy(next);
  return kept.every((k, i) => {
    const n = sorted[i] as Provenance;
    return (
      k.cluster === n.cluster &&
      k.inputHash === n.inputHash &&
      k.stale === n.stale &&
      k.epoch === n.epoch &&
      k.generation === n.generation
    );
  });
}

/**
 * A memo that keeps what one run used for the next run (and forgets what a run did not use,
 * so memory follows the current inputs). Not safe for two runs at the same time.
 */
/**
 * Whether two canonical resources encode the same: the same object, or equal content compared
 * member by member (shared parts by identity). Not by comparing their encodings: V8 flattens a
 * linked string it compares, which would copy every endpoint group an encoding links to.
 */
function sameEncoding(a: Resource, b: Resource): boolean {
  return a === b || sameContent(a, b);
}

/** A recorded unit's value, after its problems are replayed into `problems`. */
function replayed<T>(found: Recorded, problems: ProblemSink): T {
  for (const p of found.problems) problems.add(p);
  return found.value as T;
}

/** `previous` when there is one and `same` finds it equal to `value` (or it is `value`), else `value`. */
function keptValue<T>(previous: T | undefined, value: T, same: (previous: T, next: T) => boolean): T {
  return previous !== undefined && (previous === value || same(previous, value)) ? previous : value;
}

export class RunMemo implements TranslationMemo {
  readonly #units = new Map<string, Generations<Recorded>>();
  readonly #kept = new Map<string, Generations<unknown>>();
  /** Grouped tables (`row`): per group, this run's or the previous run's entries by key. */
  readonly #grouped = new Map<string, Generations<Map<string | number, unknown>>>();
  /** Output resources by slot, as canonical copies (see `resource`). */
  readonly #resources = new Generations<Resource>();
  readonly #snapshots = new Generations<KeptSnapshot>();
  readonly #scopes: ScopeCache = new WeakMap();
  readonly #scopeDecisions = new ScopeDecisions();
  readonly #verdicts = new WeakMap<Resource, string[]>();

  unit<T>(table: string, key: string, problems: ProblemSink, compute: (problems: ProblemSink) => T): T {
    const steps = this.unitSteps(table, key, problems, function* (own) {
      return compute(own);
    });
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  *unitSteps<T>(
    table: string,
    key: string,
    problems: ProblemSink,
    compute: (problems: ProblemSink) => Generator<void, T>,
  ): Generator<void, T> {
    const units = this.#table(this.#units, table);
    let found = units.get(key);
    if (!found) {
      const own = new ProblemSink();
      const value = yield* compute(own);
      found = { value, problems: [...own.all()] };
    }
    units.set(key, found);
    return replayed(found, problems);
  }

  row(table: string, group: string): MemoRow {
    const groups = this.#table(this.#grouped, table);
    const now = groups.claim(group, () => new Map());
    const before = groups.previous(group);
    // The entry `key`: this run's, or `decide` of the previous run's (undefined if none), kept for this run.
    const entry = (key: string | number, decide: (previous: unknown) => unknown): unknown => {
      const out = decide(now.has(key) ? now.get(key) : before?.get(key));
      now.set(key, out);
      return out;
    };
    return {
      unit: <T>(key: string | number, problems: ProblemSink, compute: (problems: ProblemSink) => T): T => {
        const found = entry(key, (previous) => {
          if (previous !== undefined) return previous as Recorded;
          const own = new ProblemSink();
          const value = compute(own);
          return { value, problems: [...own.all()] };
        }) as Recorded;
        return replayed(found, problems);
      },
      keep: <T>(key: string | number, value: T, same: (previous: T, next: T) => boolean): T =>
        entry(key, (previous) => keptValue(previous as T | undefined, value, same)) as T,
    };
  }

  keep<T>(table: string, slot: string, value: T, same: (previous: T, next: T) => boolean): T {
    const kept = this.#table(this.#kept, table) as Generations<T>;
    const out = keptValue(kept.get(slot), value, same);
    kept.set(slot, out);
    return out;
  }

  last<T>(table: string, slot: string): T | undefined {
    return (this.#table(this.#kept, table) as Generations<T>).get(slot);
  }

  resource(slot: string, resource: Resource): Resource {
    const previous = this.#resources.get(slot);
    // Compared member by member, not by encoding: a rebuilt output mostly shares its large parts
    // (a ServiceEntry's endpoint groups) with the previous one, and equal plain data encodes the same.
    const out =
      previous !== undefined && (previous === resource || sameContent(previous, resource))
        ? previous
        : canonicalOf(resource);
    this.#resources.set(slot, out);
    return out;
  }

  id(object: object): number {
    return idOf(object);
  }

  scopes(): ScopeCache {
    return this.#scopes;
  }

  scopeDecisions(): ScopeDecisions {
    return this.#scopeDecisions;
  }

  verdicts(): WeakMap<Resource, string[]> {
    return this.#verdicts;
  }

  snapshot(cluster: string, resources: readonly Resource[], provenance: readonly Provenance[]): OutputSnapshot {
    const previous = this.#snapshots.get(cluster);
    let snapshot: OutputSnapshot;
    if (
      previous &&
      previous.resources.length === resources.length &&
      previous.resources.every((r, i) => sameEncoding(r, resources[i] as Resource))
    ) {
      // Same resources, or rebuilt ones with the same canonical encodings (e.g. a consumer's
      // ServiceEntry made again around an unchanged endpoint group): the same output, so its
      // encoding and hash are not built again. Provenance names every admitted input, so it may differ.
      snapshot = sameProvenance(previous.snapshot.provenance, provenance)
        ? previous.snapshot
        : withProvenance(previous.snapshot, provenance);
    } else {
      snapshot = buildOutputSnapshot({ cluster, resources, provenance }, previous?.snapshot);
    }
    this.#snapshots.set(cluster, { resources, snapshot });
    return snapshot;
  }

  /** Ends a run: what it did not use is dropped. */
  turn(): void {
    for (const table of [...this.#units.values(), ...this.#kept.values(), ...this.#grouped.values()]) table.turn();
    this.#resources.turn();
    this.#snapshots.turn();
  }

  #table<V>(tables: Map<string, Generations<V>>, name: string): Generations<V> {
    let table = tables.get(name);
    if (!table) {
      table = new Generations();
      tables.set(name, table);
    }
    return table;
  }
}
