import { clusterWarmCondition, type KubernetesCluster } from '@meshrelay/api';
import type { ClusterView } from '@meshrelay/registry';
import type { SnapshotStore } from '@meshrelay/store';
import type { ConnectionTracker } from '../connections.ts';
import type { HeldOutputs } from '../held-outputs.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { OutputHub } from '../output-hub.ts';
import { RELAY_TOKEN_REUSED_CONDITION } from '../relay/token-reuse.ts';

/** The operator's view of one cluster (the API's ClusterView) from this replica's parts. */
export function clusterView(
  cluster: KubernetesCluster,
  parts: {
    store: SnapshotStore;
    connections: ConnectionTracker;
    outputs: OutputHub;
    held: HeldOutputs;
    metrics: RelayMetrics;
    replica: string;
  },
): ClusterView {
  const name = cluster.metadata.name;
  const warm = clusterWarmCondition(cluster);
  const reuse = cluster.status?.conditions?.find((c) => c.type === RELAY_TOKEN_REUSED_CONDITION && c.status === 'True');
  const conn = parts.connections.state(name);
  const connected = conn.push + conn.pull > 0;
  const input = parts.store.memoryInputs().get(name);
  const output = parts.outputs.current(name);
  return {
    name,
    uid: cluster.metadata.uid,
    createdAt: cluster.metadata.creationTimestamp,
    clusterDomain: cluster.spec.clusterDomain ?? null,
    trustDomain: cluster.spec.trustDomain ?? null,
    skipWarming: cluster.spec.skipWarming === true,
    warm: { status: warm?.status ?? 'Unknown', reason: warm?.reason ?? '', since: warm?.lastTransitionTime ?? null },
    relayTokenReuse: reuse ? { since: reuse.lastTransitionTime, message: reuse.message } : null,
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
      ? {
          hash: output.hash,
          resources: output.resources.length,
          appliedHash: parts.connections.applied(name) ?? null,
          held: parts.held.get(name) !== undefined,
        }
      : null,
  };
}
