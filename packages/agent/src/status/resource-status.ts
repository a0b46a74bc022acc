import type { relay } from '@meshrelay/api';

/** Gloo's common.gloo.solo.io.State, as the management plane reported it. */
export interface ReportedState {
  readonly observedGeneration: number;
  readonly approval: string;
  readonly message: string;
}

/** The status the plane reported for one Gloo resource of this cluster. */
export interface ReportedStatus {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly state: ReportedState;
  /** Per consuming cluster: what the resource contributed there. */
  readonly clusters: Readonly<Record<string, ReportedState>>;
}

/**
 * Writes reported statuses where the resources' owners look (a status file beside the
 * manifests, or the status subresource). Each call carries every status of the cluster:
 * a resource left out has none any more. Calls are not concurrent (the agent serializes them).
 */
export interface StatusWriter {
  /** Resolves once written; a resource that could not be written is logged, never thrown for. */
  write(statuses: readonly ReportedStatus[]): Promise<void>;
}

function stateOf(state: relay.v1.IResourceState | null | undefined): ReportedState {
  return {
    observedGeneration: Number(state?.observedGeneration ?? 0),
    approval: state?.approval ?? '',
    message: state?.message ?? '',
  };
}

/** The statuses of a Pull message, sorted by kind, namespace, name. */
export function reportedStatusesOf(message: relay.v1.IResourceStatuses): ReportedStatus[] {
  return (message.statuses ?? [])
    .map((s) => ({
      apiVersion: s.apiVersion ?? '',
      kind: s.kind ?? '',
      namespace: s.namespace ?? '',
      name: s.name ?? '',
      state: stateOf(s.state),
      clusters: Object.fromEntries(
        Object.entries(s.clusters ?? {})
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([c, st]) => [c, stateOf(st)]),
      ),
    }))
    .sort((a, b) => statusKey(a).localeCompare(statusKey(b)));
}

/** `Kind.namespace.name`: the status's identity (and its file name with the file writer). */
export function statusKey(s: Pick<ReportedStatus, 'kind' | 'namespace' | 'name'>): string {
  return `${s.kind}.${s.namespace}.${s.name}`;
}

/** The `status` field as Gloo shapes it: `state` plus the per-cluster results. */
export function statusField(s: ReportedStatus): {
  state: ReportedState;
  clusters: Readonly<Record<string, ReportedState>>;
} {
  return { state: s.state, clusters: s.clusters };
}

/**
 * The status with observedGeneration set to the generation of the object it describes, in its
 * state and in every per-cluster result (all of them were computed from that object).
 */
export function withObservedGeneration(s: ReportedStatus, generation: number): ReportedStatus {
  const observed = (state: ReportedState): ReportedState => ({ ...state, observedGeneration: generation });
  return {
    ...s,
    state: observed(s.state),
    clusters: Object.fromEntries(Object.entries(s.clusters).map(([c, state]) => [c, observed(state)])),
  };
}
