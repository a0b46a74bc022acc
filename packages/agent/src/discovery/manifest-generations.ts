import { formatResourceKey, isRecord, resourceKey, type ResourceKey } from '@meshrelay/api';
import type { ManifestEntry } from './manifest-parser.ts';

/** What a status reports when its manifest sets no metadata.generation: the manifest as it is now. */
export const DEFAULT_MANIFEST_GENERATION = 1;

/**
 * The `file` provider's answer to "which generation does a status describe": the
 * `metadata.generation` a manifest sets (a positive whole number), else 1. Nothing maintains a
 * generation for files, so 1 means "the manifest as it is now". Kept beside the snapshot, never
 * inside it: snapshots leave generation out so that equal content hashes equally whichever
 * provider found it. Shared by every file provider an agent creates and its status writer.
 */
export class ManifestGenerations {
  #byKey: ReadonlyMap<string, number> = new Map();

  /** Replaces the index with the generations of the entries of the newest merged manifests. */
  update(entries: readonly ManifestEntry[]): void {
    this.#byKey = new Map(
      entries.flatMap((e) =>
        e.generation === undefined ? [] : [[formatResourceKey(resourceKey(e.resource)), e.generation] as const],
      ),
    );
  }

  generationOf(key: ResourceKey): number {
    return this.#byKey.get(formatResourceKey(key)) ?? DEFAULT_MANIFEST_GENERATION;
  }
}

/** A manifest document's own metadata.generation when it is a positive whole number. */
export function manifestGeneration(value: unknown): number | undefined {
  const metadata = isRecord(value) ? value['metadata'] : undefined;
  const generation = isRecord(metadata) ? metadata['generation'] : undefined;
  return typeof generation === 'number' && Number.isSafeInteger(generation) && generation > 0 ? generation : undefined;
}
