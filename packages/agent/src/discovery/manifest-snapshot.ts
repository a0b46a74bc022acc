import { createHash } from 'node:crypto';
import { compareResources, formatResourceKey, resourceKey, type InputSnapshot } from '@meshrelay/api';
import { compareInputProblems, type InputProblem } from './input-problem.ts';
import type { ManifestEntry, ParsedManifest } from './manifest-parser.ts';

/**
 * Joins per-file results, given in sorted file order. When two documents define
 * the same resource the first (by file path, then document index) wins and the
 * other is reported.
 */
export function mergeManifests(parsed: readonly ParsedManifest[]): {
  entries: ManifestEntry[];
  problems: InputProblem[];
} {
  const seen = new Map<string, ManifestEntry>();
  const problems: InputProblem[] = [];
  for (const manifest of parsed) {
    problems.push(...manifest.problems);
    for (const entry of manifest.entries) {
      const key = formatResourceKey(resourceKey(entry.resource));
      const first = seen.get(key);
      if (first) {
        problems.push({
          file: entry.file,
          document: entry.document,
          path: 'metadata.name',
          message: `duplicate ${key}: already defined in ${first.file} document ${first.document}`,
        });
      } else {
        seen.set(key, entry);
      }
    }
  }
  return { entries: [...seen.values()], problems: problems.sort(compareInputProblems) };
}

export interface AssembleInit {
  readonly cluster: string;
  readonly epoch: string;
  readonly generation: number;
  /** Distinct resources (by key), each with its canonical encoding; any order. */
  readonly entries: readonly ManifestEntry[];
}

/**
 * Builds an input snapshot from resources that already carry their canonical
 * encoding: sorts them and hashes the joined encodings, so a change of one
 * file never re-encodes the others. Gives the same hash and bytes as
 * buildInputSnapshot over the same resources (the canonical encoding of a list
 * is its members' encodings joined by commas in brackets). The resources are
 * shared with the entries (they are deep-frozen).
 */
export function assembleInputSnapshot(init: AssembleInit): InputSnapshot {
  const sorted = [...init.entries].sort((a, b) => compareResources(a.resource, b.resource));
  const hash = createHash('sha256').update('[');
  let bytes = 2;
  sorted.forEach((entry, i) => {
    if (i > 0) hash.update(',');
    hash.update(entry.encoding);
    bytes += Buffer.byteLength(entry.encoding) + (i > 0 ? 1 : 0);
  });
  hash.update(']');
  return Object.freeze({
    cluster: init.cluster,
    epoch: init.epoch,
    generation: init.generation,
    hash: hash.digest('hex'),
    bytes,
    resources: Object.freeze(sorted.map((entry) => entry.resource)),
  });
}
