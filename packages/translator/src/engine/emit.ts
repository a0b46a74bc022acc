/**
 * The last stage of a translation: per-cluster candidate outputs -> output snapshots, with
 * failures isolated per Gloo resource. An invalid output fails the resource that owns it
 * (all of that resource's outputs are left out, in every cluster); everything else goes out.
 * A security-relevant resource that is INVALID or FAILED keeps its last good outputs, or
 * else gets its deny-by-default outputs.
 */
import {
  formatResourceKey,
  isCanonicalResource,
  resourceKey,
  type OutputSnapshot,
  type Provenance,
  type Resource,
} from '@meshrelay/api';
import type { OutputValidator } from '../istio/istio-validator.ts';
import type { ProblemSink } from './problems.ts';
import { annotate, sameCandidates, sourced, type Sourced } from './sources.ts';
import type { ProducedRef, StatusBook } from './status-book.ts';
import type { ProducedOutput } from './types.ts';
import { isScopedCopy } from '../workspaces/workspace-outputs.ts';

export interface EmitInput {
  /** Candidate outputs per admitted cluster (sorted cluster names as keys). */
  readonly candidates: ReadonlyMap<string, readonly Sourced[]>;
  readonly provenance: readonly Provenance[];
  /** Source ids of the security-relevant resources (fail closed). */
  readonly securitySources: readonly string[];
  readonly previousSecurityOutputs: ReadonlyMap<string, readonly ProducedOutput[]>;
  /** Deny-by-default outputs of a security resource that never had a good translation. */
  readonly denyByDefault: (source: string, cluster: string) => readonly Resource[];
  readonly validator: OutputValidator;
  /**
   * The validator's verdicts on canonical (deep-frozen, so unchangeable) outputs, kept by the
   * caller across runs with the same validator (an incremental engine's memo), so an output
   * shared by many runs is validated once.
   */
  readonly lastingVerdicts: WeakMap<Resource, string[]>;
  readonly book: StatusBook;
  readonly problems: ProblemSink;
  /** Builds a cluster's output snapshot (an incremental engine returns the previous one when nothing changed). */
  readonly snapshot: (
    cluster: string,
    resources: readonly Resource[],
    provenance: readonly Provenance[],
  ) => OutputSnapshot;
  /** What the previous run emitted for `cluster` (an incremental engine; undefined: compute everything). */
  readonly previous?: (cluster: string) => ClusterEmit | undefined;
  /** Keeps what this run emitted for `cluster`, for `previous` of the next run. */
  readonly record?: (cluster: string, emitted: ClusterEmit) => void;
}

/**
 * What one cluster's candidates became. A run whose candidates for the cluster are the same
 * outputs (same objects, same sources) as in a `clean` earlier run, where nothing was left out,
 * emits the same resources: it reuses them instead of deduplicating, validating and annotating again.
 */
export interface ClusterEmit {
  readonly candidates: readonly Sourced[];
  /** No duplicate, no output of a failed owner, no closed security resource when it was emitted. */
  readonly clean: boolean;
  readonly resources: readonly Resource[];
  /** The book's `produced` records of the cluster: source id and the record `produced` returned. */
  readonly produced: readonly (readonly [string, ProducedRef])[];
}

export interface EmitResult {
  readonly outputs: Map<string, OutputSnapshot>;
  readonly securityOutputs: Map<string, ProducedOutput[]>;
}

/** Keys of unchangeable outputs (canonical ones and scoped copies), built once per object. */
const keptKeys = new WeakMap<Resource, string>();

function keyOf(r: Resource): string {
  let key = keptKeys.get(r);
  if (key === undefined) {
    key = formatResourceKey(resourceKey(r));
    if (isCanonicalResource(r) || isScopedCopy(r)) keptKeys.set(r, key);
  }
  return key;
}

/** Keeps the first output per key; a later one with the same key is noted on its owner. */
function dedupe(cluster: string, list: readonly Sourced[], book: StatusBook, problems: ProblemSink): Sourced[] {
  const seen = new Set<string>();
  const out: Sourced[] = [];
  for (const s of list) {
    const key = keyOf(s.resource);
    if (seen.has(key)) {
      const reason = `output ${key} in cluster ${cluster} is also produced by another resource; the first is kept`;
      problems.add({
        cluster,
        resource: key,
        reason: 'two sources produce an output with this name; the first is kept',
      });
      book.note(s.sources[0] as string, 'WARNING', reason, cluster);
      continue;
    }
    seen.add(key);
    out.push(s);
  }
  return out;
}

function makeChecker(validator: OutputValidator, frozen: WeakMap<Resource, string[]>): (r: Resource) => string[] {
  // Shared outputs are the same objects in every cluster: validate each once.
  const verdicts = new Map<Resource, string[]>();
  return (r) => {
    const cache = isCanonicalResource(r) || isScopedCopy(r) ? frozen : verdicts;
    let issues = cache.get(r);
    if (!issues) {
      issues = validator.validate(r);
      cache.set(r, issues);
    }
    return issues;
  };
}

/**
 * Validates every candidate; returns the owners that failed (their outputs are all left out).
 * The clusters in `reused` are skipped: their outputs are the objects a clean earlier run validated.
 */
function* failOwners(
  perCluster: ReadonlyMap<string, readonly Sourced[]>,
  reused: ReadonlySet<string>,
  check: (r: Resource) => string[],
  input: EmitInput,
): Generator<void, Set<string>> {
  const failed = new Set<string>();
  for (const [cluster, list] of perCluster) {
    if (reused.has(cluster)) continue;
    for (const s of list) {
      // Validating an output may be long (a large ServiceEntry; a schema compiled on first use).
      yield;
      const issues = check(s.resource);
      if (issues.length === 0) continue;
      const owner = s.sources[0] as string;
      failed.add(owner);
      const reason = `invalid output ${keyOf(s.resource)}: ${issues.join('; ')}`;
      input.problems.add({
        cluster,
        resource: keyOf(s.resource),
        reason: `${reason}; the outputs of ${owner} are left out`,
        approval: 'FAILED',
      });
      input.book.note(owner, 'FAILED', reason, cluster);
    }
  }
  return failed;
}

/** What a failed or invalid security resource contributes to `cluster` instead of its own outputs. */
function fallbackFor(source: string, cluster: string, check: (r: Resource) => string[], input: EmitInput): Sourced[] {
  const previous = input.previousSecurityOutputs.get(source);
  if (previous) {
    input.book.note(source, 'WARNING', 'its last good translation stays in place', cluster);
    return previous.filter((p) => p.cluster === cluster).map((p) => sourced(p.resource, source));
  }
  const out: Sourced[] = [];
  for (const r of input.denyByDefault(source, cluster)) {
    const issues = check(r);
    if (issues.length > 0)
      input.book.note(
        source,
        'FAILED',
        `deny-by-default output ${keyOf(r)} is invalid and cannot be applied: ${issues.join('; ')}`,
        cluster,
      );
    else out.push(sourced(r, source));
  }
  if (out.length > 0)
    input.book.note(
      source,
      'WARNING',
      'never translated successfully: the workloads it selects deny every request',
      cluster,
    );
  return out;
}

/** Whether `cluster` may reuse what a clean earlier run emitted for the same candidates. */
function reusable(cluster: string, list: readonly Sourced[], input: EmitInput): ClusterEmit | undefined {
  const previous = input.previous?.(cluster);
  return previous?.clean === true && sameCandidates(previous.candidates, list) ? previous : undefined;
}

/** One cluster's outputs, computed: what is kept of its candidates, annotated, and recorded in the book. */
function emitCluster(
  cluster: string,
  list: readonly Sourced[],
  failed: ReadonlySet<string>,
  closed: ReadonlySet<string>,
  check: (r: Resource) => string[],
  input: EmitInput,
): { resources: Resource[]; produced: [string, Resource][]; dropped: boolean } {
  const kept = list.filter((s) => !failed.has(s.sources[0] as string) && !closed.has(s.sources[0] as string));
  const dropped = kept.length !== list.length;
  for (const source of closed) kept.push(...fallbackFor(source, cluster, check, input));
  const taken = new Set<string>();
  const resources: Resource[] = [];
  const produced: [string, Resource][] = [];
  for (const s of kept) {
    const key = keyOf(s.resource);
    if (taken.has(key)) continue;
    taken.add(key);
    const annotated = annotate(s);
    resources.push(annotated);
    for (const id of new Set(s.sources)) produced.push([id, annotated]);
  }
  return { resources, produced, dropped };
}

/** Emits the outputs, yielding after each cluster (a driver may hand the event loop back there). */
export function* emitSteps(input: EmitInput): Generator<void, EmitResult> {
  const { book, problems } = input;
  const check = makeChecker(input.validator, input.lastingVerdicts);
  const perCluster = new Map<string, Sourced[]>();
  const previous = new Map<string, ClusterEmit>();
  const deduped = new Set<string>();
  for (const [cluster, list] of input.candidates) {
    const before = reusable(cluster, list, input);
    if (before) previous.set(cluster, before);
    const once = before ? [...list] : dedupe(cluster, list, book, problems);
    if (once.length !== list.length) deduped.add(cluster);
    perCluster.set(cluster, once);
    yield;
  }
  const failed = yield* failOwners(perCluster, new Set(previous.keys()), check, input);
  const closed = new Set(
    input.securitySources.filter(
      (s) => failed.has(s) || book.approval(s) === 'INVALID' || book.approval(s) === 'FAILED',
    ),
  );
  const outputs = new Map<string, OutputSnapshot>();
  const securityOutputs = new Map<string, ProducedOutput[]>();
  const security = new Set(input.securitySources);
  for (const [cluster, list] of perCluster) {
    // Another cluster's output may have failed an owner whose outputs are here too: then compute.
    const before =
      closed.size === 0 && (failed.size === 0 || !list.some((s) => failed.has(s.sources[0] as string)))
        ? previous.get(cluster)
        : undefined;
    const raw = input.candidates.get(cluster) ?? list;
    let emitted: ClusterEmit;
    if (before) {
      emitted = { ...before, candidates: raw };
      for (const [id, ref] of before.produced) book.reproduced(id, cluster, ref);
    } else {
      const made = emitCluster(cluster, list, failed, closed, check, input);
      const produced = made.produced.map(([id, annotated]): [string, ProducedRef] => [
        id,
        book.produced(id, cluster, annotated),
      ]);
      emitted = {
        candidates: raw,
        clean: !deduped.has(cluster) && closed.size === 0 && !made.dropped,
        resources: made.resources,
        produced,
      };
    }
    for (const s of list) {
      const owner = s.sources[0] as string;
      if (security.has(owner) && !closed.has(owner) && !failed.has(owner)) {
        const entries = securityOutputs.get(owner) ?? [];
        entries.push({ cluster, resource: s.resource });
        securityOutputs.set(owner, entries);
      }
    }
    input.record?.(cluster, emitted);
    outputs.set(cluster, input.snapshot(cluster, emitted.resources, input.provenance));
    yield;
  }
  // A closed resource keeps its whole last good translation (also for clusters not admitted now).
  for (const source of closed) {
    const previousOutputs = input.previousSecurityOutputs.get(source);
    if (previousOutputs) securityOutputs.set(source, [...previousOutputs]);
  }
  return { outputs, securityOutputs };
}
