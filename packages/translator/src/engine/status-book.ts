/**
 * Per-resource bookkeeping for one translation: which Gloo resources exist, what was noted
 * about each (warnings, invalid fields, failed outputs), and the outputs each produced.
 * Turns into Gloo-shaped statuses at the end.
 */
import { formatResourceKey, isCanonicalResource, resourceKey, type Resource } from '@meshrelay/api';
import type { ProblemSink } from './problems.ts';
import { sameElements } from './same-content.ts';
import { sourceId } from './sources.ts';
import type { TranslationMemo } from './translation-memo.ts';
import type { Approval, OutputRef, ResourceState, ResourceStatus } from './types.ts';

const RANK: Record<Approval, number> = { ACCEPTED: 0, WARNING: 1, INVALID: 2, FAILED: 3 };

function worst(a: Approval, b: Approval): Approval {
  return RANK[b] > RANK[a] ? b : a;
}

interface Note {
  readonly approval: Approval;
  readonly message: string;
}

interface Entry {
  readonly cluster: string;
  readonly resource: Resource;
  readonly notes: Note[];
  readonly perCluster: Map<string, Note[]>;
  readonly outputs: KeyedRef[];
}

/** An output ref with the key it sorts by (cluster, apiVersion, kind, namespace, name). */
interface KeyedRef {
  readonly r: OutputRef;
  readonly k: string;
}

/** What `StatusBook.produced` recorded: the output's reference (opaque outside this module). */
export type ProducedRef = object;

function keyedRef(cluster: string, output: Resource): KeyedRef {
  const key = resourceKey(output);
  const r = Object.freeze({
    cluster,
    apiVersion: key.apiVersion,
    kind: key.kind,
    namespace: key.namespace,
    name: key.name,
  });
  return Object.freeze({ r, k: `${cluster}\u0000${r.apiVersion}\u0000${r.kind}\u0000${r.namespace}\u0000${r.name}` });
}

/** Refs of canonical (unchangeable) outputs by output and cluster: built once, shared by every translation. */
const keptRefs = new WeakMap<Resource, Map<string, KeyedRef>>();

function refOf(cluster: string, output: Resource): KeyedRef {
  if (!isCanonicalResource(output)) return keyedRef(cluster, output);
  let byCluster = keptRefs.get(output);
  if (!byCluster) {
    byCluster = new Map();
    keptRefs.set(output, byCluster);
  }
  let ref = byCluster.get(cluster);
  if (!ref) {
    ref = keyedRef(cluster, output);
    byCluster.set(cluster, ref);
  }
  return ref;
}

function stateOf(notes: readonly Note[], generation: number): ResourceState {
  // Most resources have nothing noted in most clusters.
  if (notes.length === 0) return { observedGeneration: generation, approval: 'ACCEPTED', message: '' };
  const approval = notes.reduce<Approval>((acc, n) => worst(acc, n.approval), 'ACCEPTED');
  const message = [...new Set(notes.map((n) => n.message))].join('; ');
  return { observedGeneration: generation, approval, message };
}

/**
 * `refs` sorted by cluster, apiVersion, kind, namespace and name. Each ref's sort key is built
 * with the ref, not once per comparison: a resource exported to every cluster has thousands of outputs.
 */
function sortedRefs(refs: readonly KeyedRef[]): OutputRef[] {
  const keyed = [...refs];
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return keyed.map((x) => x.r);
}

/** What a quiet resource's status was made from (see `StatusBook.statuses`). */
interface QuietStatus {
  readonly generation: number;
  readonly refs: readonly KeyedRef[];
  readonly consumers: readonly string[];
  readonly status: ResourceStatus;
}

export class StatusBook {
  readonly #entries = new Map<string, Entry>();
  /** `cluster\0formatResourceKey` -> source id, to attach problems to their resource. */
  readonly #byProblemKey = new Map<string, string>();

  /** Registers a Gloo resource found in `cluster`'s input; returns its source id. */
  register(cluster: string, resource: Resource): string {
    const id = sourceId(resource, cluster);
    if (!this.#entries.has(id)) {
      this.#entries.set(id, { cluster, resource, notes: [], perCluster: new Map(), outputs: [] });
      this.#byProblemKey.set(`${cluster}\u0000${formatResourceKey(resourceKey(resource))}`, id);
    }
    return id;
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /** Notes something about a resource, for the whole mesh or (with `consumer`) for one consuming cluster. */
  note(id: string, approval: Approval, message: string, consumer?: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    if (consumer === undefined) {
      entry.notes.push({ approval, message });
      return;
    }
    const list = entry.perCluster.get(consumer) ?? [];
    list.push({ approval, message });
    entry.perCluster.set(consumer, list);
  }

  approval(id: string): Approval {
    const entry = this.#entries.get(id);
    if (!entry) return 'ACCEPTED';
    const all = [...entry.notes, ...[...entry.perCluster.values()].flat()];
    return stateOf(all, 0).approval;
  }

  /**
   * Records that an output of `id` went out to `cluster`. Returns the record, which `reproduced`
   * takes to record the same output again in a later book without looking it up.
   */
  produced(id: string, cluster: string, output: Resource): ProducedRef {
    const ref = refOf(cluster, output);
    this.reproduced(id, cluster, ref);
    return ref;
  }

  /** `produced` with the record an earlier `produced` of the same output in `cluster` returned. */
  reproduced(id: string, cluster: string, ref: ProducedRef): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    entry.outputs.push(ref as KeyedRef);
    if (!entry.perCluster.has(cluster)) entry.perCluster.set(cluster, []);
  }

  /** Attaches every problem naming a registered resource (by its source cluster) to that resource. */
  absorb(problems: ProblemSink): void {
    for (const p of problems.all()) {
      const id = this.#byProblemKey.get(`${p.cluster ?? ''}\u0000${p.resource ?? ''}`);
      if (id !== undefined) this.note(id, p.approval ?? 'WARNING', p.reason);
    }
  }

  /**
   * The statuses of every registered resource, by source id. With a memo that keeps the last run,
   * a resource with nothing noted whose outputs and consuming clusters are the same objects, in
   * the same order, as in the last run gets the last run's status object: the most common case at
   * scale, and one a consumer of statuses can recognise by identity.
   */
  statuses(memo?: TranslationMemo): ResourceStatus[] {
    return [...this.#entries.keys()].sort().map((id) => {
      const e = this.#entries.get(id) as Entry;
      if (memo === undefined || e.notes.length > 0) return this.#status(id, e);
      const consumers = [...e.perCluster.keys()];
      if (consumers.some((c) => (e.perCluster.get(c) as Note[]).length > 0)) return this.#status(id, e);
      const generation = e.resource.metadata.generation ?? 0;
      const last = memo.last<QuietStatus>('quiet-status', id);
      // The source id names the resource's cluster, kind, namespace and name; not its apiVersion.
      const same =
        last !== undefined &&
        last.generation === generation &&
        last.status.apiVersion === resourceKey(e.resource).apiVersion &&
        sameElements(last.refs, e.outputs) &&
        sameElements(last.consumers, consumers);
      const kept = same ? last : { generation, refs: e.outputs, consumers, status: this.#status(id, e) };
      memo.keep('quiet-status', id, kept, () => false);
      return kept.status;
    });
  }

  #status(id: string, e: Entry): ResourceStatus {
    const generation = e.resource.metadata.generation ?? 0;
    const clusters: Record<string, ResourceState> = {};
    for (const c of [...e.perCluster.keys()].sort())
      clusters[c] = stateOf([...e.notes, ...(e.perCluster.get(c) ?? [])], generation);
    const key = resourceKey(e.resource);
    // Frozen: a status may be handed out again by later runs (see `statuses`).
    return Object.freeze({
      source: id,
      cluster: e.cluster,
      apiVersion: key.apiVersion,
      kind: key.kind,
      namespace: key.namespace,
      name: key.name,
      state: stateOf([...e.notes, ...[...e.perCluster.values()].flat()], generation),
      clusters: Object.freeze(clusters),
      outputs: Object.freeze(sortedRefs(e.outputs)),
    });
  }
}
