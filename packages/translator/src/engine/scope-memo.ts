/**
 * Scoping kept across runs: what `scopeCandidates` made of one output for one consumer is reused
 * while nothing it read changed, so a run re-scopes only the outputs that are new objects, the
 * consumers whose index changed, or everything when the scoping world changed.
 */
import type { Resource } from '@meshrelay/api';
import { sameElements } from './same-content.ts';
import { sameCandidates, type Sourced } from './sources.ts';

/** One output scoped for one consumer, with what the scoping read besides the output itself. */
interface ScopedEntry {
  readonly sources: readonly string[];
  /** Digest naming the workspace model, every admitted Gloo resource and the owners (see pipeline.ts routeWorld). */
  readonly world: string;
  /** Identity of the consumer's index (its namespaces), or 0 without one. */
  readonly index: number;
  /** The scoped resource, or null when the consumer does not receive the output. */
  readonly out: Resource | null;
}

/** Scoping results, kept by whoever runs the translations (a memo) for as long as it keeps them. */
export class ScopeDecisions {
  /** By output object, then by consumer cluster. */
  readonly byOutput = new WeakMap<Resource, Map<string, ScopedEntry>>();
  /** The last list scoped per consumer cluster. */
  readonly lastLists = new Map<string, LastList>();
}

export interface ScopeReads {
  readonly consumer: string;
  readonly world: string;
  readonly index: number;
}

/** The last list scoped per consumer, by the decisions it was scoped with. */
interface LastList {
  readonly list: readonly Sourced[];
  readonly world: string;
  readonly index: number;
  readonly out: readonly Sourced[];
}

/**
 * `scope(list)` for `reads.consumer`, computing only the outputs whose kept result does not
 * match `reads`; `scope` must be `scopeCandidates` bound to this run's model and consumer.
 * The same outputs (same objects and sources) with the same reads as the consumer's last list
 * give that list's result, the same array, without looking each output up.
 */
export function scopeKept(
  list: readonly Sourced[],
  reads: ScopeReads,
  decisions: ScopeDecisions,
  scope: (list: readonly Sourced[]) => Sourced[],
): readonly Sourced[] {
  const byConsumer = decisions.lastLists;
  const last = byConsumer.get(reads.consumer);
  if (last && last.world === reads.world && last.index === reads.index && sameCandidates(last.list, list)) {
    byConsumer.set(reads.consumer, { ...last, list });
    return last.out;
  }
  const out = scopeEach(list, reads, decisions, scope);
  byConsumer.set(reads.consumer, { list, world: reads.world, index: reads.index, out });
  return out;
}

function scopeEach(
  list: readonly Sourced[],
  reads: ScopeReads,
  decisions: ScopeDecisions,
  scope: (list: readonly Sourced[]) => Sourced[],
): Sourced[] {
  const out: Sourced[] = [];
  for (const s of list) {
    let byConsumer = decisions.byOutput.get(s.resource);
    if (!byConsumer) {
      byConsumer = new Map();
      decisions.byOutput.set(s.resource, byConsumer);
    }
    let entry = byConsumer.get(reads.consumer);
    if (
      !entry ||
      entry.world !== reads.world ||
      entry.index !== reads.index ||
      !sameElements(entry.sources, s.sources)
    ) {
      const scoped = scope([s])[0];
      entry = { sources: s.sources, world: reads.world, index: reads.index, out: scoped ? scoped.resource : null };
      byConsumer.set(reads.consumer, entry);
    }
    if (entry.out === null) continue;
    out.push(entry.out === s.resource ? s : { resource: entry.out, sources: s.sources });
  }
  return out;
}
