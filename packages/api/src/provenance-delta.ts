import { canonicalJson } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { copyProvenance, sha256Hex, type Provenance } from './snapshot.ts';

/**
 * A provenance list relative to a base's: the entries that are new or differ (by cluster), the
 * clusters whose entry is gone, and the hash of the whole resulting list. At tier M an output's
 * provenance has one entry per cluster (~80 bytes each); one input change alters one of them.
 */
export interface ProvenanceChange {
  readonly changed: readonly Provenance[];
  readonly removed: readonly string[];
  /** sha256 (hex) of the canonical JSON of the whole list, sorted by cluster (provenanceHash). */
  readonly hash: string;
  /**
   * Clusters among `changed` whose entry keeps the base's epoch: their entries travel without
   * it (Provenance.epoch_of_base) and the receiver takes it from the entry it holds.
   */
  readonly epochOfBase?: readonly string[];
}

/** The hash a relative provenance announces: of the canonical JSON of the list's plain copies, sorted by cluster. */
export function provenanceHash(provenance: readonly Provenance[]): string {
  return sha256Hex(canonicalJson(sortedByCluster(provenance.map(copyProvenance))));
}

/** What takes `base`'s provenance to `next`'s. */
export function provenanceChange(base: readonly Provenance[], next: readonly Provenance[]): ProvenanceChange {
  const before = new Map(
    base.map((p) => [p.cluster, { text: canonicalJson(copyProvenance(p)), epoch: p.epoch }] as const),
  );
  const changed = next.filter((p) => before.get(p.cluster)?.text !== canonicalJson(copyProvenance(p)));
  const present = new Set(next.map((p) => p.cluster));
  const removed = [...before.keys()].filter((c) => !present.has(c)).sort();
  const epochOfBase = changed.filter((p) => p.epoch && before.get(p.cluster)?.epoch === p.epoch).map((p) => p.cluster);
  return {
    changed: changed.map(copyProvenance),
    removed,
    hash: provenanceHash(next),
    ...(epochOfBase.length > 0 ? { epochOfBase } : {}),
  };
}

/**
 * `held` with `change` applied, sorted by cluster. Refused with
 * MESHRELAY_ERR_DELTA_BASE_MISMATCH when the result does not hash to the announced hash: the
 * provenance held is not the one the sender based the change on.
 */
export function applyProvenanceChange(held: readonly Provenance[], change: ProvenanceChange): Provenance[] {
  const byCluster = new Map(held.map((p) => [p.cluster, copyProvenance(p)] as const));
  const epochOfBase = new Set(change.epochOfBase);
  for (const cluster of change.removed) byCluster.delete(cluster);
  for (const p of change.changed) {
    if (!epochOfBase.has(p.cluster)) {
      byCluster.set(p.cluster, copyProvenance(p));
      continue;
    }
    const epoch = byCluster.get(p.cluster)?.epoch;
    if (!epoch)
      throw new MeshrelayError(
        'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
        `provenance entry of cluster ${JSON.stringify(p.cluster)} keeps the base's epoch, but the held provenance has none for it`,
      );
    byCluster.set(p.cluster, copyProvenance({ ...p, epoch }));
  }
  const result = sortedByCluster([...byCluster.values()]);
  const hash = sha256Hex(canonicalJson(result));
  if (hash !== change.hash) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
      `provenance rebuilt from the held one hashes to ${hash}, not the announced ${change.hash}`,
    );
  }
  return result;
}

function sortedByCluster(provenance: Provenance[]): Provenance[] {
  return provenance.sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
}
