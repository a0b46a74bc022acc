import { isClusterWarm, type KubernetesCluster } from '@meshrelay/api';

export interface GateConfig {
  /** Hold translation with no timeout while any required cluster is missing. */
  readonly safeMode: boolean;
  /** Without safe mode: hold at most this long after start; 0 = no wait. */
  readonly safeStartWindowSeconds: number;
}

export interface GateInput {
  readonly clusters: readonly KubernetesCluster[];
  /** Clusters whose input snapshot this replica holds in memory or can read from Redis. */
  readonly present: ReadonlySet<string>;
  readonly elapsedSeconds: number;
  /** True once the gate has opened on this replica: it never closes again while the replica runs. */
  readonly openedBefore: boolean;
}

export type GateDecision =
  | {
      readonly state: 'open';
      readonly reason: 'all-required-present' | 'window-elapsed' | 'no-wait' | 'already-open';
      /** Clusters whose inputs may be translated: present and registered. */
      readonly admitted: readonly string[];
      /** Required clusters left out (only after a window elapsed). */
      readonly missing: readonly string[];
    }
  | {
      readonly state: 'held';
      readonly mode: 'safe-mode' | 'safe-start-window';
      readonly missing: readonly string[];
      /** Seconds until the window ends (safe-start-window only). */
      readonly windowRemainingSeconds?: number;
    };

/** Warm, registered clusters that are not marked skipWarming. */
export function requiredClusters(clusters: readonly KubernetesCluster[]): string[] {
  return clusters
    .filter((c) => isClusterWarm(c) && c.spec.skipWarming !== true)
    .map((c) => c.metadata.name)
    .sort();
}

/**
 * The safe-mode decision (DESIGN §6), pure: no clock, no I/O. Decides whether a
 * replica may translate and which inputs it may use. Deregistered clusters are
 * simply absent from `clusters`, so they are never required nor admitted.
 */
export function decideGate(config: GateConfig, input: GateInput): GateDecision {
  const registered = input.clusters.map((c) => c.metadata.name);
  const admitted = registered.filter((name) => input.present.has(name)).sort();
  const missing = requiredClusters(input.clusters).filter((name) => !input.present.has(name));
  if (input.openedBefore) return { state: 'open', reason: 'already-open', admitted, missing };
  if (missing.length === 0) return { state: 'open', reason: 'all-required-present', admitted, missing };
  if (config.safeMode) return { state: 'held', mode: 'safe-mode', missing };
  if (config.safeStartWindowSeconds <= 0) return { state: 'open', reason: 'no-wait', admitted, missing };
  if (input.elapsedSeconds >= config.safeStartWindowSeconds)
    return { state: 'open', reason: 'window-elapsed', admitted, missing };
  return {
    state: 'held',
    mode: 'safe-start-window',
    missing,
    windowRemainingSeconds: config.safeStartWindowSeconds - input.elapsedSeconds,
  };
}
