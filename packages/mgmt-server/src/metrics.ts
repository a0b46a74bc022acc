import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ERROR_CATALOGUE } from '@meshrelay/api';
import type { ConnectionTracker } from './connections.ts';
import type { HeldOutput } from './held-outputs.ts';
import type { GateDecision } from './safe-mode-gate.ts';

/**
 * The management server's Prometheus metrics. Every series carries the
 * replica's `pod` label so per-replica queries (e.g. joining safe-mode state
 * with connected clients) work across replicas. Gauges that describe current
 * state are computed at scrape time from the components that own that state.
 */
/** The refusal code label of anything an agent sends that the catalogue does not name. */
const OTHER_CODE = 'other';

export class RelayMetrics {
  readonly registry = new Registry();
  readonly translationDuration: Histogram<string>;
  readonly storedInputValidationDuration: Histogram<string>;
  /** Full collections run once idle after a burst of work (see MemoryReclaimer), and what they freed. */
  readonly memoryReclaimDuration: Histogram<string>;
  readonly memoryReclaimedBytes: Counter<string>;
  readonly outputPushes: Counter<'cluster'>;
  /** Translations that changed a cluster's unscoped output but not what its interests let through. */
  readonly interestPushesAvoided: Counter<string>;
  readonly snapshotsRejected: Counter<'cluster' | 'code'>;
  readonly outputsRefused: Counter<'cluster' | 'code'>;
  readonly outputWriteFailures: Counter<'cluster'>;
  readonly snapshotBytes: Counter<'cluster' | 'direction' | 'kind'>;
  /** Relay sessions admitted, and refused with a retry-after hint, by the reconnect pacing. */
  readonly sessionsAdmitted: Counter<string>;
  readonly sessionsPaced: Counter<string>;
  readonly translationProblems: Gauge<string>;
  readonly #inputs = new Map<string, { receivedAtMs: number; bytes: number; resources: number }>();
  #redisUp = () => false;
  #gate: () => GateDecision | undefined = () => undefined;
  #held: () => readonly HeldOutput[] = () => [];
  #carried: () => readonly string[] = () => [];
  /** Clusters ever reported in safe mode, so their series drop to 0 instead of vanishing. */
  readonly #safeModeSeen = new Set<string>();

  constructor(pod: string, connections: ConnectionTracker) {
    this.registry.setDefaultLabels({ pod });
    collectDefaultMetrics({ register: this.registry, prefix: 'meshrelay_process_' });
    const registers = [this.registry];
    const perCluster = (name: string, help: string, read: () => Map<string, number>) =>
      new Gauge({
        name,
        help,
        labelNames: ['cluster'],
        registers,
        collect() {
          this.reset();
          for (const [cluster, value] of read()) this.set({ cluster }, value);
        },
      });
    perCluster('relay_push_clients_connected', 'Push streams open on this replica, per cluster', () =>
      connections.counts('push'),
    );
    perCluster('relay_pull_clients_connected', 'Pull streams open on this replica, per cluster', () =>
      connections.counts('pull'),
    );
    perCluster('meshrelay_input_snapshot_age_seconds', 'Seconds since the held input snapshot was received', () =>
      this.#inputValues((i) => (Date.now() - i.receivedAtMs) / 1000),
    );
    perCluster('meshrelay_input_snapshot_bytes', 'Size of the held input snapshot (canonical encoding)', () =>
      this.#inputValues((i) => i.bytes),
    );
    perCluster('meshrelay_input_snapshot_resources', 'Resources in the held input snapshot', () =>
      this.#inputValues((i) => i.resources),
    );
    perCluster(
      'relay_push_clients_warmed',
      'Push streams on this replica whose cluster has delivered its first snapshot',
      () => connections.warmedCounts(),
    );
    perCluster(
      'gloo_mesh_safe_mode_active',
      '1 for each required cluster whose missing input holds translation on this replica',
      () => this.#safeModeValues(),
    );
    perCluster(
      'meshrelay_held_outputs',
      '1 for each cluster whose output the blast-radius guard holds',
      () => new Map(this.#held().map((h) => [h.cluster, 1])),
    );
    perCluster(
      'meshrelay_stale_contribution',
      '1 for each absent cluster whose last known contribution this replica carries over',
      () => new Map(this.#carried().map((c) => [c, 1])),
    );
    const redisUp = () => (this.#redisUp() ? 1 : 0);
    new Gauge({
      name: 'meshrelay_redis_up',
      help: '1 when Redis is reachable, 0 when down or not configured',
      registers,
      collect() {
        this.set(redisUp());
      },
    });
    this.translationDuration = new Histogram({
      name: 'meshrelay_translation_duration_seconds',
      help: 'Time to translate all admitted inputs into outputs',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.storedInputValidationDuration = new Histogram({
      name: 'meshrelay_stored_input_validation_duration_seconds',
      help: 'Time to validate stored inputs that no intake of this replica judged (loaded from Redis), before translating them',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.memoryReclaimDuration = new Histogram({
      name: 'meshrelay_memory_reclaim_duration_seconds',
      help: 'Full collections run once the server was idle after a burst of work, by how long each paused the server',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4],
      registers,
    });
    this.memoryReclaimedBytes = new Counter({
      name: 'meshrelay_memory_reclaimed_bytes_total',
      help: 'V8 heap bytes those collections freed',
      registers,
    });
    this.outputPushes = new Counter({
      name: 'relay_output_pushes_total',
      help: 'Output snapshots sent to agents',
      labelNames: ['cluster'],
      registers,
    });
    this.interestPushesAvoided = new Counter({
      name: 'meshrelay_interest_pushes_avoided_total',
      help: 'Output changes a cluster was not sent because they touched only VirtualDestinations it has no interest in (--interest-scoped-outputs)',
      registers,
    });
    this.sessionsAdmitted = new Counter({
      name: 'relay_sessions_admitted_total',
      help: 'Agent relay sessions admitted by the reconnect pacing (--relay-admit-rate)',
      registers,
    });
    this.sessionsPaced = new Counter({
      name: 'relay_sessions_paced_total',
      help: 'Agent relay streams refused with a go-away retry-after hint because the admit rate was reached',
      registers,
    });
    this.snapshotsRejected = new Counter({
      name: 'meshrelay_input_snapshots_rejected_total',
      help: 'Input snapshots refused (too large, undecodable, hash mismatch, stale)',
      labelNames: ['cluster', 'code'],
      registers,
    });
    this.outputsRefused = new Counter({
      name: 'relay_output_refusals_total',
      help: 'Output snapshots an agent acked with accepted=false (it kept its previous output)',
      labelNames: ['cluster', 'code'],
      registers,
    });
    this.outputWriteFailures = new Counter({
      name: 'meshrelay_output_store_write_failures_total',
      help: 'Output writes Redis did not take (down or too slow); each is retried by the write-back',
      labelNames: ['cluster'],
      registers,
    });
    this.snapshotBytes = new Counter({
      name: 'relay_snapshot_bytes_total',
      help: 'Bytes of snapshots taken in (direction=push) and sent (direction=pull): encoded header plus chunk payload, by kind (full or delta)',
      labelNames: ['cluster', 'direction', 'kind'],
      registers,
    });
    this.translationProblems = new Gauge({
      name: 'meshrelay_translation_problems',
      help: 'Problems reported by the last translation',
      registers,
    });
  }

  /** `snapshot` may be an input snapshot or what stands for one (an input resumed by its version). */
  /** Records that `cluster`'s input (its canonical `bytes` and `resources` count) was taken in now. */
  recordInput(
    cluster: string,
    size: { readonly bytes: number; readonly resources: number },
    receivedAtMs = Date.now(),
  ): void {
    this.#inputs.set(cluster, { receivedAtMs, bytes: size.bytes, resources: size.resources });
  }

  inputReceivedAt(cluster: string): Date | undefined {
    const info = this.#inputs.get(cluster);
    return info ? new Date(info.receivedAtMs) : undefined;
  }

  /** Drops every series and record of a deregistered cluster, so churn does not grow memory or cardinality. */
  forgetCluster(cluster: string): void {
    this.#inputs.delete(cluster);
    this.#safeModeSeen.delete(cluster);
    this.outputPushes.remove({ cluster });
    this.outputWriteFailures.remove({ cluster });
    for (const direction of ['push', 'pull'])
      for (const kind of ['full', 'delta']) this.snapshotBytes.remove({ cluster, direction, kind });
    // remove() needs the full label set; codes come from the one catalogue, and removing an absent set is a no-op.
    for (const code of Object.keys(ERROR_CATALOGUE)) this.snapshotsRejected.remove({ cluster, code });
    for (const code of [...Object.keys(ERROR_CATALOGUE), OTHER_CODE]) this.outputsRefused.remove({ cluster, code });
  }

  /**
   * Counts an agent's refusal of an output; a code outside the catalogue counts as "other" (agents do not mint series).
   */
  recordOutputRefused(cluster: string, code: string): void {
    this.outputsRefused.inc({ cluster, code: Object.hasOwn(ERROR_CATALOGUE, code) ? code : OTHER_CODE });
  }

  /** How many clusters this object still keeps state for (bounded-memory checks). */
  trackedClusters(): number {
    return new Set([...this.#inputs.keys(), ...this.#safeModeSeen]).size;
  }

  setRedisUpProbe(probe: () => boolean): void {
    this.#redisUp = probe;
  }

  setStateProbes(gate: () => GateDecision | undefined, held: () => readonly HeldOutput[]): void {
    this.#gate = gate;
    this.#held = held;
  }

  /** Reports the clusters whose contribution is carried over (DESIGN §13). */
  setCarriedProbe(carried: () => readonly string[]): void {
    this.#carried = carried;
  }

  #safeModeValues(): Map<string, number> {
    const gate = this.#gate();
    const missing = gate?.state === 'held' ? gate.missing : [];
    for (const cluster of missing) this.#safeModeSeen.add(cluster);
    return new Map([...this.#safeModeSeen].map((c) => [c, missing.includes(c) ? 1 : 0]));
  }

  #inputValues(read: (i: { receivedAtMs: number; bytes: number; resources: number }) => number): Map<string, number> {
    return new Map([...this.#inputs].map(([cluster, info]) => [cluster, read(info)]));
  }
}
