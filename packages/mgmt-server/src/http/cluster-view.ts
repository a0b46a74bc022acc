import { clusterWarmCondition, type KubernetesCluster } from '@meshrelay/api';
import type { SnapshotStore } from '@meshrelay/store';
import type { ConnectionTracker } from '../connections.ts';
import type { HeldOutputs } from '../held-outputs.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { OutputHub } from '../output-hub.ts';

export interface ClusterView {
  readonly name: string;
  readonly uid: string;
  readonly createdAt: string;
  readonly clusterDomain: string | null;
  readonly skipWarming: boolean;
  readonly warm: { readonly status: string; readonly reason: string; readonly since: string | null };
  readonly connection: {
    readonly connected: boolean;
    readonly push: number;
    readonly pull: number;
    readonly replica: string | null;
    readonly disconnectedSince: string | null;
  };
  readonly input: {
    readonly hash: string;
    readonly epoch: string;
    readonly generation: number;
    readonly bytes: number;
    readonly resources: number;
    /** When this replica received it (null when it was read from Redis). */
    readonly receivedAt: string | null;
    /** True while the agent is disconnected: the snapshot is kept and still used. */
    readonly stale: boolean;
  } | null;
  readonly output: {
    readonly hash: string;
    readonly resources: number;
    readonly appliedHash: string | null;
    /** The blast-radius guard holds this cluster's newest output. */
    readonly held: boolean;
  } | null;
}

/** The operator's view of one cluster, as the API, UI and meshctl show it. */
export function clusterView(
  cluster: KubernetesCluster,
  parts: { store: SnapshotStore; connections: ConnectionTracker; outputs: OutputHub; held: HeldOutputs; metrics: RelayMetrics; replica: string },
): ClusterView {
  const name = cluster.metadata.name;
  const warm = clusterWarmCondition(cluster);
  const conn = parts.connections.state(name);
  const connected = conn.push + conn.pull > 0;
  const input = parts.store.memoryInputs().get(name);
  const output = parts.outputs.current(name);
  return {
    name,
    uid: cluster.metadata.uid,
    createdAt: cluster.metadata.creationTimestamp,
    clusterDomain: cluster.spec.clusterDomain ?? null,
    skipWarming: cluster.spec.skipWarming === true,
    warm: { status: warm?.status ?? 'Unknown', reason: warm?.reason ?? '', since: warm?.lastTransitionTime ?? null },
    connection: {
      connected,
      push: conn.push,
      pull: conn.pull,
      replica: connected ? parts.replica : null,
      disconnectedSince: conn.disconnectedSince?.toISOString() ?? null,
    },
    input: input
      ? {
          hash: input.hash,
          epoch: input.epoch,
          generation: input.generation,
          bytes: input.bytes,
          resources: input.resources.length,
          receivedAt: parts.metrics.inputReceivedAt(name)?.toISOString() ?? null,
          stale: !connected,
        }
      : null,
    output: output
      ? { hash: output.hash, resources: output.resources.length, appliedHash: parts.connections.applied(name) ?? null, held: parts.held.get(name) !== undefined }
      : null,
  };
}
