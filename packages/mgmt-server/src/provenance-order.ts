// DESIGN §13: provenance carries each input's order (agent epoch + generation),
// so a replica never sends an agent an output older than the one it holds.

import { deepFreeze, type InputSnapshot, type OutputSnapshot, type Provenance } from '@meshrelay/api';

/**
 * The output with each provenance entry completed from the inputs it was built
 * from: the input's epoch and generation, and `stale` for carried inputs. The
 * hash is unchanged (it covers resources only). Pure.
 */
export function completeProvenance(
  output: OutputSnapshot,
  inputs: ReadonlyMap<string, InputSnapshot>,
  carried: ReadonlySet<string>,
): OutputSnapshot {
  const provenance = output.provenance.map((p): Provenance => {
    const input = inputs.get(p.cluster);
    return {
      ...p,
      ...(carried.has(p.cluster) ? { stale: true } : {}),
      ...(input && input.hash === p.inputHash && input.epoch
        ? { epoch: input.epoch, generation: input.generation }
        : {}),
    };
  });
  return Object.freeze({ ...output, provenance: deepFreeze(provenance) });
}

/**
 * Clusters for which the agent's held output was built from a newer input than
 * `next` was: same epoch, higher generation. Inputs of different epochs (an
 * agent restart) are not ordered and never block. Pure.
 */
export function newerInputsHeld(held: readonly Provenance[], next: readonly Provenance[]): string[] {
  const nextByCluster = new Map(next.map((p) => [p.cluster, p]));
  return held
    .filter((h) => {
      const n = nextByCluster.get(h.cluster);
      return (
        n !== undefined && h.epoch !== undefined && h.epoch === n.epoch && (h.generation ?? 0) > (n.generation ?? 0)
      );
    })
    .map((h) => h.cluster)
    .sort();
}
