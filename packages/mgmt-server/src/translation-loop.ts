import type { Logger } from 'pino';
import type { InputSnapshot, KubernetesCluster, OutputSnapshot, Resource } from '@meshrelay/api';
import type { ClusterRegistry, VipAllocationStore } from '@meshrelay/registry';
import type { SnapshotStore } from '@meshrelay/store';
import {
  IncrementalTranslator,
  virtualDestinationKeys,
  type ClusterInfo,
  type InputJudgements,
  type OutputValidator,
  type ProducedOutput,
  type ResourceStatus,
  type TranslationProblem,
} from '@meshrelay/translator';
import type { CarriedContributions } from './carried-contributions.ts';
import type { RelayMetrics } from './metrics.ts';
import type { OutputHub } from './output-hub.ts';
import type { OutputPersister } from './output-persister.ts';
import { OutputScoper, type ScopedOutput } from './interests/output-scope.ts';
import { isUnjudged, judgeStoredInputs } from './input-intake.ts';
import { completeProvenance } from './provenance-order.ts';
import { decideGate, type GateConfig, type GateDecision } from './safe-mode-gate.ts';

export interface TranslationLoopOptions {
  readonly registry: ClusterRegistry;
  readonly store: SnapshotStore;
  readonly outputs: OutputHub;
  /** Writes published outputs to the store behind delivery. */
  readonly persister: OutputPersister;
  readonly vips: VipAllocationStore;
  readonly validator: OutputValidator;
  readonly metrics: RelayMetrics;
  readonly logger: Logger;
  readonly gate: GateConfig;
  /** The last known inputs of absent clusters, carried over into outputs (DESIGN §13). */
  readonly contributions: CarriedContributions;
  readonly debounceMs: number;
  /** Milliseconds since this replica started (the gate's clock). */
  readonly uptimeMs: () => number;
  /**
   * The management plane's Gloo Workspaces, read at each run; none = one implicit workspace. A
   * new array (by identity) is a change: a trigger after it translates again.
   */
  readonly workspaces?: () => readonly Resource[];
  /**
   * Interest-scoped outputs (DESIGN §17, --interest-scoped-outputs): each cluster's output keeps
   * a VirtualDestination only while the cluster has an interest in it. Absent: outputs unscoped.
   */
  readonly scope?: InterestScope;
  /**
   * The verdicts of this server's intake on the input lists it accepted; stored inputs it did
   * not judge are judged and recorded here before translation, which then admits the clean ones
   * without validating each resource again.
   */
  readonly judgements: InputJudgements;
}

/** The hosts each cluster holds a lease on; `version` bumps when any of that may have changed. */
export interface InterestScope {
  readonly version: number;
  held(cluster: string): ReadonlySet<string>;
}

export interface TranslationStatus {
  readonly gate: GateDecision;
  readonly heldSince?: Date;
  /** When a safe-start window ends (only while held by the window). */
  readonly windowEndsAt?: Date;
  readonly lastRunAt?: Date;
  readonly problems: readonly TranslationProblem[];
  /** Gloo-shaped status of every Gloo input resource at the last translation. */
  readonly resources: readonly ResourceStatus[];
  readonly admitted: readonly { cluster: string; inputHash: string }[];
}

/** Workspaces when the loop is given none (one implicit global workspace). */
const NO_WORKSPACES: readonly Resource[] = Object.freeze([]);

/**
 * Everything a translation reads: the input snapshots (by object: a snapshot is immutable) and
 * which are carried, the registry's cluster settings and the VIPs.
 */
interface RunInputs {
  readonly inputs: ReadonlyMap<string, InputSnapshot>;
  readonly stale: ReadonlySet<string>;
  readonly clusters: string;
  readonly vips: string;
  readonly workspaces: readonly Resource[];
}

function sameRunInputs(a: RunInputs, b: RunInputs): boolean {
  if (a.inputs.size !== b.inputs.size || a.stale.size !== b.stale.size) return false;
  for (const [cluster, input] of a.inputs) if (b.inputs.get(cluster) !== input) return false;
  for (const cluster of a.stale) if (!b.stale.has(cluster)) return false;
  return a.clusters === b.clusters && a.vips === b.vips && a.workspaces === b.workspaces;
}

/**
 * Runs translation whenever inputs or the registry change (debounced, one run
 * at a time, a trigger during a run causes one more run). Every run first asks
 * the safe-mode gate; while it holds, nothing is computed or published, and the
 * gate is re-checked every second so a window can elapse.
 */
export class TranslationLoop {
  readonly #o: TranslationLoopOptions;
  #timer: NodeJS.Timeout | undefined;
  #recheck: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #opened = false;
  #status: TranslationStatus;
  /**
   * One translation engine for the loop's lifetime: it keeps the last run's work so a run after
   * a small change recomputes only what depends on it, and hands the event loop back while it
   * works (heartbeats, acks and the HTTP API keep answering during a large translation).
   */
  readonly #engine: IncrementalTranslator;
  /** Last good outputs of security resources, fed back so a broken AccessPolicy fails closed. */
  #securityOutputs: ReadonlyMap<string, readonly ProducedOutput[]> = new Map();
  /** Which cluster's definition of each Gloo name was used, fed back so a clash keeps it. */
  #nameOwners: ReadonlyMap<string, string> = new Map();
  /** What the last completed run translated. */
  #lastRun: RunInputs | undefined;
  /** The last run's outputs before interest scoping, to scope again when only interests change. */
  #lastBuilt: readonly OutputSnapshot[] = [];
  /** The interest version the published outputs were scoped with. */
  #scopedVersion = -1;
  readonly #scoper = new OutputScoper();
  /** Hash of each cluster's last unscoped output: a change that scoping hid is a push avoided. */
  readonly #unscopedHashes = new Map<string, string>();
  readonly #statusListeners = new Set<(s: TranslationStatus) => void>();
  /**
   * The VirtualDestination keys each input declares, computed once per snapshot (snapshots are
   * immutable; at scale a scan of every input's resources on every run costs more than the change).
   */
  readonly #destinationKeys = new WeakMap<InputSnapshot, readonly string[]>();

  constructor(options: TranslationLoopOptions) {
    this.#o = options;
    this.#engine = new IncrementalTranslator(options.validator);
    this.#status = {
      gate: { state: 'held', mode: 'safe-start-window', missing: [] },
      problems: [],
      resources: [],
      admitted: [],
    };
  }

  #destinationKeysOf(input: InputSnapshot): readonly string[] {
    let keys = this.#destinationKeys.get(input);
    if (keys === undefined) {
      keys = virtualDestinationKeys(new Map([[input.cluster, input]]));
      this.#destinationKeys.set(input, keys);
    }
    return keys;
  }

  status(): TranslationStatus {
    return this.#status;
  }

  onStatus(listener: (s: TranslationStatus) => void): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  start(): void {
    this.#recheck = setInterval(() => {
      if (this.#status.gate.state === 'held') this.trigger('gate re-check');
    }, 1000);
    this.#recheck.unref();
    this.trigger('start');
  }

  /**
   * Coalesces triggers: the first arms a run `debounceMs` later and those that come before it
   * fires join that run. A later trigger never postpones an armed run, so a steady stream of
   * changes (or the gate's once-a-second re-check) cannot starve translation.
   */
  trigger(reason: string): void {
    if (this.#stopped) return;
    this.#o.logger.debug({ reason }, 'translation triggered');
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#kick();
    }, this.#o.debounceMs);
  }

  /** Runs now and resolves when this run (and any it queued) is done. For tests and start-up. */
  async runNow(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#kick();
    while (this.#running) await this.#running;
    await this.#o.contributions.settled();
  }

  /** Stops running; resolves once the current run and the contributions it kept are written. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#recheck);
    while (this.#running) await this.#running;
    await this.#o.contributions.settled();
  }

  #kick(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#runOnce()
      .catch((err: unknown) => this.#o.logger.error({ err }, 'translation failed; previous outputs stay in place'))
      .finally(() => {
        this.#running = undefined;
        if (this.#again && !this.#stopped) {
          this.#again = false;
          this.#kick();
        }
      });
  }

  async #runOnce(): Promise<void> {
    const { registry, store } = this.#o;
    const clusters = registry.list();
    const inputs = await store.loadInputs(clusters.map((c) => c.metadata.name));
    await this.#judgeStored(inputs);
    const decision = decideGate(this.#o.gate, {
      clusters,
      present: new Set(inputs.keys()),
      elapsedSeconds: this.#o.uptimeMs() / 1000,
      openedBefore: this.#opened,
    });
    if (decision.state === 'held') {
      const windowEndsAt =
        decision.windowRemainingSeconds === undefined
          ? undefined
          : new Date(Date.now() + decision.windowRemainingSeconds * 1000);
      const { windowEndsAt: _old, ...rest } = this.#status;
      this.#setStatus({
        ...rest,
        gate: decision,
        heldSince: this.#status.heldSince ?? new Date(),
        ...(windowEndsAt ? { windowEndsAt } : {}),
      });
      return;
    }
    if (!this.#opened)
      this.#o.logger.info({ reason: decision.reason, missing: decision.missing }, 'safe-mode gate open: translating');
    this.#opened = true;
    const admitted = new Map(decision.admitted.map((name) => [name, inputs.get(name) as InputSnapshot]));
    // DESIGN §13: a registered cluster that is absent keeps its last known
    // contribution, carried as a stale input that provenance names as such.
    const { contributions } = this.#o;
    const absent = clusters.map((c) => c.metadata.name).filter((name) => !admitted.has(name));
    const carried = await contributions.carry(absent, new Date());
    // The records are read after the inputs: a cluster whose input arrived meanwhile (through
    // another replica, which then kept its record) is present now, not absent. Carrying it would
    // name its current input stale in every output of this run; the next run admits it instead.
    if (carried.size > 0 && (await store.loadInputs([...carried.keys()])).size > 0) {
      this.#o.logger.debug(
        { clusters: [...carried.keys()] },
        "an absent cluster's input arrived during this run; translating again with it",
      );
      this.#again = true;
      return;
    }
    await this.#translate(admitted, carried, clusters, decision);
    // Kept after the outputs went out, in the background: writing a changed cluster's whole input
    // to the shared state is not what an agent waits for, nor the next run (its carry waits only
    // for the records of clusters that are absent by then).
    contributions
      .remember(admitted.values())
      .catch((err: unknown) => this.#o.logger.warn({ err }, 'could not keep the contributions of this run'));
  }

  /**
   * Inputs are judged once, where they enter: an agent's snapshot at intake, a stored one (read
   * from Redis) here, the first time this replica loads it, also while the gate holds. Translation
   * then admits them without judging each resource again.
   */
  async #judgeStored(inputs: ReadonlyMap<string, InputSnapshot>): Promise<void> {
    const unjudged = [...inputs.values()].filter((input) => isUnjudged(input, this.#o.judgements));
    if (unjudged.length === 0) return;
    const end = this.#o.metrics.storedInputValidationDuration.startTimer();
    await judgeStoredInputs(unjudged, this.#o.judgements);
    end();
  }

  async #translate(
    admitted: ReadonlyMap<string, InputSnapshot>,
    carried: ReadonlyMap<string, InputSnapshot>,
    clusters: readonly KubernetesCluster[],
    gate: GateDecision,
  ): Promise<void> {
    const inputs = new Map([...admitted, ...carried]);
    const staleClusters = new Set(carried.keys());
    // VIPs are released only on positive evidence: an input without the destination, or deregistration.
    // A carried input is the absent cluster's last admitted one, so it claims exactly what it claimed then.
    const present = new Map([...inputs].map(([name, input]) => [name, this.#destinationKeysOf(input)]));
    const vips = await this.#o.vips.reconcile({ present, registered: new Set(clusters.map((c) => c.metadata.name)) });
    const infos: ClusterInfo[] = clusters.map((c) => ({
      name: c.metadata.name,
      ...(c.spec.clusterDomain ? { clusterDomain: c.spec.clusterDomain } : {}),
      ...(c.spec.trustDomain ? { trustDomain: c.spec.trustDomain } : {}),
      ...(c.metadata.labels ? { labels: c.metadata.labels } : {}),
    }));
    // A trigger that changed nothing translation reads (an agent's ack of a write that a run already
    // took in, a condition in the registry) would give the last run's result again: skip it.
    // The same array by identity from run to run: a run whose inputs did not change is skipped.
    const workspaces = this.#o.workspaces?.() ?? NO_WORKSPACES;
    const run: RunInputs = {
      inputs,
      stale: staleClusters,
      clusters: JSON.stringify(infos),
      vips: JSON.stringify([...vips].sort()),
      workspaces,
    };
    if (this.#lastRun !== undefined && sameRunInputs(this.#lastRun, run)) {
      if (this.#o.scope !== undefined && this.#o.scope.version !== this.#scopedVersion) {
        // Only interests changed: the translation stands, each cluster is scoped again (the
        // scoper redoes only the clusters whose held hosts changed).
        this.#publish(this.#lastBuilt);
        return;
      }
      this.#o.logger.debug('nothing translation reads changed since the last run; not translated again');
      // The gate's account of why it is open may have moved on (e.g. to already-open).
      if (JSON.stringify(gate) !== JSON.stringify(this.#status.gate)) this.#setStatus({ ...this.#status, gate });
      return;
    }
    const end = this.#o.metrics.translationDuration.startTimer();
    const input = {
      inputs,
      clusters: infos,
      vips,
      previousSecurityOutputs: this.#securityOutputs,
      previousNameOwners: this.#nameOwners,
      workspaces,
      judgements: this.#o.judgements,
    };
    const result = await this.#engine.run(input);
    end();
    this.#securityOutputs = result.securityOutputs;
    this.#nameOwners = result.nameOwners;
    this.#o.metrics.translationProblems.set(result.problems.length);
    for (const problem of result.problems) this.#o.logger.warn({ ...problem }, 'translation problem');
    this.#lastBuilt = [...result.outputs.values()].map((built) => completeProvenance(built, inputs, staleClusters));
    this.#publish(this.#lastBuilt);
    const { heldSince: _held, windowEndsAt: _window, ...rest } = this.#status;
    this.#setStatus({
      ...rest,
      gate,
      lastRunAt: new Date(),
      problems: result.problems,
      resources: result.statuses,
      admitted: [...admitted.values()].map((s) => ({ cluster: s.cluster, inputHash: s.hash })),
    });
    this.#lastRun = run;
  }

  /** Publishes each cluster's output (scoped to its interests when scoping is on) that changed. */
  #publish(built: readonly OutputSnapshot[]): void {
    const { scope } = this.#o;
    if (scope !== undefined) this.#scopedVersion = scope.version;
    for (const unscoped of built) {
      const output = scope === undefined ? unscoped : this.#scoper.scope(unscoped, scope.held(unscoped.cluster)).output;
      const unscopedBefore = this.#unscopedHashes.get(unscoped.cluster);
      if (scope !== undefined) this.#unscopedHashes.set(unscoped.cluster, unscoped.hash);
      if (this.#o.outputs.current(output.cluster)?.hash === output.hash) {
        this.#o.outputs.refresh(output);
        if (unscopedBefore !== undefined && unscopedBefore !== unscoped.hash)
          this.#o.metrics.interestPushesAvoided.inc();
        continue;
      }
      // Agents first; the Redis write follows without holding up delivery or the next cluster.
      this.#o.outputs.publish(output);
      this.#o.persister.persist(output);
      this.#o.logger.info(
        { cluster: output.cluster, hash: output.hash, resources: output.resources.length },
        'output snapshot updated',
      );
    }
  }

  /** Per cluster, which VirtualDestinations its output carries and why (empty without scoping). */
  scoping(): ReadonlyMap<string, ScopedOutput> {
    return this.#scoper.all();
  }

  #setStatus(status: TranslationStatus): void {
    this.#status = status;
    for (const listener of this.#statusListeners) listener(status);
  }
}
