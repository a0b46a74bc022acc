import { resourceId, type OutputSnapshot, type Provenance } from '@meshrelay/api';

export interface BlastRadiusConfig {
  /** Hold an output that deletes more than this share (0..1) of what the agent holds. */
  readonly maxDeleteShare: number;
  /** Outputs replacing fewer resources than this are never held for their share alone. */
  readonly minResources: number;
}

export interface HeldState {
  readonly keys: ReadonlySet<string>;
  readonly provenance: readonly Provenance[];
}

export type BlastRadiusVerdict =
  | { readonly verdict: 'send'; readonly deleted: number }
  | {
      readonly verdict: 'hold';
      readonly reason: 'delete-share' | 'missing-inputs';
      readonly deleted: number;
      readonly held: number;
      /** Clusters the held output was built from that the new one lacks. */
      readonly missingClusters: readonly string[];
      readonly message: string;
    };

/**
 * Decides whether a new output may go to an agent, from what the agent holds.
 * Pure. Two rules:
 * - deletions need positive evidence: when the agent's output was built from a
 *   cluster that is still registered but absent from the new output's
 *   provenance, any deletion is held (the missing snapshot may be what removed it);
 * - a large blast radius waits for an operator: deleting more than
 *   `maxDeleteShare` of the held resources is held.
 */
export function assessOutput(
  config: BlastRadiusConfig,
  held: HeldState,
  next: OutputSnapshot,
  registered: ReadonlySet<string>,
): BlastRadiusVerdict {
  const nextKeys = new Set(next.resources.map(resourceId));
  let deleted = 0;
  for (const key of held.keys) if (!nextKeys.has(key)) deleted++;
  if (deleted === 0) return { verdict: 'send', deleted };
  const nextClusters = new Set(next.provenance.map((p) => p.cluster));
  const missingClusters = held.provenance
    .map((p) => p.cluster)
    .filter((c) => registered.has(c) && !nextClusters.has(c))
    .sort();
  if (missingClusters.length > 0) {
    return {
      verdict: 'hold',
      reason: 'missing-inputs',
      deleted,
      held: held.keys.size,
      missingClusters,
      message: `would delete ${deleted} of ${held.keys.size} resources while the inputs of ${missingClusters.join(', ')} are missing`,
    };
  }
  const share = deleted / held.keys.size;
  if (held.keys.size >= config.minResources && share > config.maxDeleteShare) {
    return {
      verdict: 'hold',
      reason: 'delete-share',
      deleted,
      held: held.keys.size,
      missingClusters,
      message: `would delete ${deleted} of ${held.keys.size} resources (${Math.round(share * 100)} % > ${Math.round(config.maxDeleteShare * 100)} %)`,
    };
  }
  return { verdict: 'send', deleted };
}
