import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { MeshrelayError, type AssembledSnapshot, type BackoffOptions } from '@meshrelay/api';
import { AccessLogSink } from './observability/access-log-sink.ts';
import { createAgentBackends } from './agent-backends.ts';
import { createAgentMetrics, type AgentMetrics } from './observability/agent-metrics.ts';
import type { AgentConfig } from './config.ts';
import type { DiscoveryProvider } from './discovery/discovery-provider.ts';
import { HealthServer, type AgentStatus } from './health-server.ts';
import { DataPlaneReporter, buildDataPlaneReport } from './xds/data-plane-reporter.ts';
import { DEFAULT_INTEREST_RENEW_INTERVAL_MS, InterestTracker, subscribedNames } from './interest/interest-tracker.ts';
import { XdsFeed } from './xds/xds-feed.ts';
import { LeaderDuties } from './leader/leader-duties.ts';
import { createAgentElector } from './leader/leader-election.ts';
import { LeaderTermProvider } from './leader/leader-term-provider.ts';
import type { OutputApplier } from './apply/output-applier.ts';
import { FileOutputWriter } from './apply/output-writer.ts';
import { RelayClient } from './relay/relay-client.ts';
import { StatusReporter } from './status/status-reporter.ts';
import { trustDomainOf } from './trust/identities.ts';
import { createMeshTrust } from './trust/mesh-trust-setup.ts';
import type { MeshTrustClient } from './trust/mesh-trust-client.ts';

/** Knobs that are not operator configuration: timing overrides for tests. */
export interface AgentTuning {
  readonly backoff?: BackoffOptions;
  readonly fencedBackoffMs?: number;
  readonly healthyAfterMs?: number;
  readonly renewCheckIntervalMs?: number;
  readonly epoch?: string;
  readonly defaultMetrics?: boolean;
  /** Overrides both --health-host and --access-log-host. */
  readonly healthHost?: string;
}

/**
 * The composition root of a relay agent: builds the discovery provider and the
 * output applier (file or kubernetes), the relay client and the health server from one config,
 * starts them in dependency order and stops them in reverse.
 */
export class Agent {
  readonly #config: AgentConfig;
  readonly #logger: Logger;
  readonly #provider: DiscoveryProvider;
  readonly #writer: OutputApplier;
  readonly #relay: RelayClient;
  readonly #health: HealthServer;
  readonly #metrics: AgentMetrics;
  readonly #duties: LeaderDuties;
  readonly #accessLog: AccessLogSink;
  readonly #statuses: StatusReporter;
  readonly #xds: XdsFeed;
  readonly #dataPlane: DataPlaneReporter;
  readonly #trust: MeshTrustClient | undefined;
  readonly #interest: InterestTracker;
  #started = false;

  constructor(config: AgentConfig, logger: Logger, tuning: AgentTuning = {}) {
    this.#config = config;
    this.#logger = logger;
    const { cluster } = config;
    const backends = createAgentBackends(config, logger, tuning.epoch);
    // Discovery runs only while this replica leads; each term gets a fresh provider and so a fresh epoch.
    this.#provider = new LeaderTermProvider(backends.provider, backends.createProvider);
    this.#writer = backends.applier;
    this.#statuses = new StatusReporter(backends.statuses, logger);
    this.#metrics = createAgentMetrics(cluster, {
      inputProblems: () => this.#provider.problems.length,
      ...(tuning.defaultMetrics !== undefined ? { defaultMetrics: tuning.defaultMetrics } : {}),
    });
    this.#relay = new RelayClient({
      cluster,
      serverAddresses: config.serverAddresses,
      rootCaPem: () => readOptionalFile(config.rootCaFile, '--root-ca-file'),
      token: () =>
        config.token !== undefined ? Promise.resolve(config.token) : readOptionalFile(config.tokenFile, '--token-file'),
      credentials: backends.credentials,
      latestSnapshot: () => this.#provider.current,
      heldOutput: () => this.#writer.held,
      applyOutput: (output) => this.#applyOutput(output),
      // Only the leader writes statuses, as only it applies outputs.
      applyStatuses: (statuses) => {
        if (this.#duties.leader) this.#statuses.report(statuses);
      },
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      heartbeatTimeoutMs: config.heartbeatTimeoutMs,
      maxSnapshotBytes: config.maxSnapshotBytes,
      logger,
      ...(tuning.backoff ? { backoff: tuning.backoff } : {}),
      ...(tuning.fencedBackoffMs !== undefined ? { fencedBackoffMs: tuning.fencedBackoffMs } : {}),
      ...(tuning.healthyAfterMs !== undefined ? { healthyAfterMs: tuning.healthyAfterMs } : {}),
      ...(tuning.renewCheckIntervalMs !== undefined ? { renewCheckIntervalMs: tuning.renewCheckIntervalMs } : {}),
      events: {
        onPullOpen: () => {
          this.#dataPlane.streamOpened();
          this.#trust?.callSoon();
          this.#interest.streamOpened();
        },
        onConnectionChange: (s) => {
          this.#metrics.pushConnected.set(s.pushConnected ? 1 : 0);
          this.#metrics.pullConnected.set(s.pullConnected ? 1 : 0);
        },
        onSnapshotPushed: () => this.#metrics.snapshotsPushed.inc(),
        onSnapshotAcked: (_snapshot, ack) => {
          if (!ack.accepted) this.#metrics.snapshotsRejected.inc();
        },
      },
    });
    this.#xds = new XdsFeed({
      cluster,
      port: config.xdsPort ?? 0,
      host: config.xdsHost ?? '127.0.0.1',
      ...(config.xdsSocket !== undefined ? { socket: config.xdsSocket } : {}),
      registry: this.#metrics.registry,
      logger,
    });
    this.#dataPlane = new DataPlaneReporter({
      build: () => buildDataPlaneReport(this.#xds.serving, this.#xds.proxies(), this.#xds.findings(), Date.now()),
      send: (report) => this.#relay.sendDataPlane(report),
    });
    this.#xds.onChange(() => this.#dataPlane.changed());
    this.#trust = createMeshTrust(config, {
      channel: () => this.#relay.channel,
      discovered: () => this.#provider.current?.resources,
      registry: this.#metrics.registry,
      logger,
      onStep: () => this.#syncMeshTls(config.istioNamespace ?? 'istio-system'),
    });
    // The hosts proxies subscribe to and access logs name (DESIGN §17): a new one is told at once.
    this.#interest = new InterestTracker({
      send: (report) => this.#relay.sendInterest(report),
      renewIntervalMs: config.interestRenewIntervalMs ?? DEFAULT_INTEREST_RENEW_INTERVAL_MS,
    });
    this.#xds.onChange(() => this.#interest.subscribed(subscribedNames(this.#xds.proxies())));
    this.#provider.onSnapshot((snapshot) => {
      this.#xds.discovered(snapshot.resources);
      this.#metrics.inputGeneration.set(snapshot.generation);
      this.#relay.snapshotAvailable();
    });
    this.#health = new HealthServer({
      port: config.healthPort,
      host: tuning.healthHost ?? config.healthHost ?? '0.0.0.0',
      status: () => this.status(),
      registry: this.#metrics.registry,
      xdsProxies: () => this.#xds.proxies(),
      xdsFindings: () => this.#xds.findings(),
    });
    this.#accessLog = new AccessLogSink({
      onDestination: (destination) => this.#interest.used(destination),
      port: config.accessLogPort,
      host: tuning.healthHost ?? config.accessLogHost ?? '0.0.0.0',
      registry: this.#metrics.registry,
      logger,
    });
    const elector = createAgentElector(config, logger);
    this.#duties = new LeaderDuties({
      elector,
      startDuties: (stillLeading) => this.#startLeaderDuties(stillLeading),
      stopDuties: () => this.#stopLeaderDuties(),
      logger,
      onLeadershipChange: (leader) => {
        this.#metrics.leader.set(leader ? 1 : 0);
        this.#xds.leading(leader);
      },
      retryAfterFailureMs: config.leaseDurationMs,
    });
  }

  /** The bound access-log sink port (after start). */
  get accessLogPort(): number {
    return this.#accessLog.port;
  }

  /** The bound health port (after start). */
  get healthPort(): number {
    return this.#health.port;
  }

  /** The `current` directory of the file applier; throws MESHRELAY_ERR_INVALID_CONFIG with `--apply kubernetes`. */
  get outputCurrentPath(): string {
    if (!(this.#writer instanceof FileOutputWriter))
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        'the output is server-side applied (--apply kubernetes), not written to a directory',
      );
    return this.#writer.currentPath;
  }

  /**
   * Restores the last applied output (headless operation), reads the cluster's
   * state once (manifests or API server), opens the health server and starts
   * relaying. Throws MESHRELAY_ERR_INVALID_CONFIG when the manifests dir cannot
   * be read, MESHRELAY_ERR_UNAVAILABLE when the API server cannot be listed in time.
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    await this.#health.start();
    await this.#accessLog.start();
    await this.#xds.start();
    this.#interest.start();
    // Without an election this starts the duties at once (and rejects on failure); with one, when the lease is won.
    await this.#duties.start();
    const { cluster, leaderElection } = this.#config;
    this.#logger.info(
      {
        cluster,
        leaderElection,
        healthPort: this.#health.port,
        accessLogPort: this.#accessLog.port,
        servers: this.#config.serverAddresses,
      },
      'relay agent started',
    );
  }

  /**
   * Stops the leader duties (then releases the lease), and closes the access-log sink and the health server;
   * idempotent.
   */
  async stop(): Promise<void> {
    await this.#duties.stop();
    this.#dataPlane.stop();
    this.#interest.stop();
    await this.#accessLog.stop();
    await this.#xds.stop();
    await this.#health.stop();
    this.#logger.info({ cluster: this.#config.cluster }, 'relay agent stopped');
  }

  /**
   * What only the leader does: restore the last applied output (headless
   * operation), read the cluster's state (manifests or API server) and relay.
   * Stops early once `stillLeading()` turns false.
   */
  async #startLeaderDuties(stillLeading: () => boolean): Promise<void> {
    const restored = await this.#writer.restore();
    if (restored !== undefined) this.#xds.output(restored.resources);
    if (!stillLeading()) return;
    await this.#provider.start();
    if (this.#provider.current !== undefined) this.#xds.discovered(this.#provider.current.resources);
    this.#metrics.inputGeneration.set(this.#provider.current?.generation ?? 0);
    if (stillLeading()) this.#relay.start();
    // Mesh trust starts from cacerts on disk: workload certificates keep being issued while the server is away.
    if (stillLeading()) await this.#trust?.start();
  }

  /**
   * xDS carries mesh TLS while the agent holds an intermediate to issue workload certificates from
   * and the management plane has not said mesh trust is off (so it stays on while the plane is away).
   */
  #syncMeshTls(rootNamespace: string): void {
    const s = this.#trust?.status;
    const on = s !== undefined && s.enabled !== false && s.intermediate !== undefined;
    this.#xds.meshTls(
      on ? { trustDomain: trustDomainOf(this.#provider.current?.resources ?? []), rootNamespace } : undefined,
    );
  }

  /** Relay first (no more pushes or applies), then the applier's pending write, then discovery. */
  async #stopLeaderDuties(): Promise<void> {
    await this.#trust?.stop();
    await this.#relay.stop();
    await this.#statuses.settled();
    await this.#writer.stop();
    await this.#provider.stop();
  }

  status(): AgentStatus {
    const input = this.#provider.current;
    return {
      cluster: this.#config.cluster,
      relay: this.#relay.status,
      input: input
        ? { epoch: input.epoch, generation: input.generation, hash: input.hash, resources: input.resources.length }
        : undefined,
      heldOutputHash: this.#writer.heldHash,
      ...(this.#trust ? { meshTrust: this.#trust.status } : {}),
      problems: this.#provider.problems,
      leadership: {
        mode: this.#config.leaderElection,
        replica: this.#config.replicaId,
        leader: this.#duties.leader,
        holder: this.#config.leaderElection === 'none' ? this.#config.replicaId : this.#duties.holder,
      },
    };
  }

  async #applyOutput(output: AssembledSnapshot): Promise<void> {
    const { cluster } = this.#config;
    // A replica that lost the lease (or was frozen past its renew deadline) must not write what the new leader owns.
    if (!this.#duties.leader)
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `replica ${this.#config.replicaId} no longer leads; output ${output.hash} not applied`,
      );
    const changed = await this.#writer.apply({
      cluster,
      hash: output.hash,
      provenance: output.provenance,
      resources: output.resources,
    });
    const fields = { cluster, hash: output.hash, resources: output.resources.length, provenance: output.provenance };
    if (changed) {
      this.#xds.output(output.resources);
      this.#metrics.outputsApplied.inc();
      this.#logger.info(fields, 'output applied');
    } else {
      this.#logger.debug(fields, 'output unchanged; nothing written');
    }
  }
}

async function readOptionalFile(file: string | undefined, flag: string): Promise<string | undefined> {
  if (file === undefined) return undefined;
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `${flag}: cannot read ${file}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
