import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { MeshrelayError, type AssembledSnapshot } from '@meshrelay/api';
import { validateInputResource } from '@meshrelay/translator';
import { createAgentMetrics, type AgentMetrics } from './agent-metrics.ts';
import type { BackoffOptions } from './backoff.ts';
import type { AgentConfig } from './config.ts';
import { CredentialStore } from './credential-store.ts';
import { FileDiscoveryProvider } from './file-provider.ts';
import { HealthServer, type AgentStatus } from './health-server.ts';
import { FileOutputWriter } from './output-writer.ts';
import { RelayClient } from './relay-client.ts';

/** Knobs that are not operator configuration: timing overrides for tests. */
export interface AgentTuning {
  readonly backoff?: BackoffOptions;
  readonly fencedBackoffMs?: number;
  readonly healthyAfterMs?: number;
  readonly renewCheckIntervalMs?: number;
  readonly epoch?: string;
  readonly defaultMetrics?: boolean;
  readonly healthHost?: string;
}

/**
 * The composition root of a relay agent: builds the file discovery provider,
 * the output writer, the relay client and the health server from one config,
 * starts them in dependency order and stops them in reverse.
 */
export class Agent {
  readonly #config: AgentConfig;
  readonly #logger: Logger;
  readonly #provider: FileDiscoveryProvider;
  readonly #writer: FileOutputWriter;
  readonly #relay: RelayClient;
  readonly #health: HealthServer;
  readonly #metrics: AgentMetrics;
  #started = false;

  constructor(config: AgentConfig, logger: Logger, tuning: AgentTuning = {}) {
    this.#config = config;
    this.#logger = logger;
    const { cluster } = config;
    this.#provider = new FileDiscoveryProvider({
      cluster,
      manifestsDir: config.manifestsDir,
      validate: validateInputResource,
      logger,
      debounceMs: config.debounceMs,
      rescanIntervalMs: config.rescanIntervalMs,
      ...(tuning.epoch !== undefined ? { epoch: tuning.epoch } : {}),
    });
    this.#writer = new FileOutputWriter({ cluster, outputDir: config.outputDir, stateDir: config.stateDir, logger });
    this.#metrics = createAgentMetrics(cluster, {
      inputProblems: () => this.#provider.problems.length,
      ...(tuning.defaultMetrics !== undefined ? { defaultMetrics: tuning.defaultMetrics } : {}),
    });
    this.#relay = new RelayClient({
      cluster,
      serverAddresses: config.serverAddresses,
      rootCaPem: () => readOptionalFile(config.rootCaFile, '--root-ca-file'),
      token: () => (config.token !== undefined ? Promise.resolve(config.token) : readOptionalFile(config.tokenFile, '--token-file')),
      credentials: new CredentialStore({ stateDir: config.stateDir, cluster, logger }),
      latestSnapshot: () => this.#provider.current,
      heldOutput: () => this.#writer.held,
      applyOutput: (output) => this.#applyOutput(output),
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      heartbeatTimeoutMs: config.heartbeatTimeoutMs,
      maxSnapshotBytes: config.maxSnapshotBytes,
      logger,
      ...(tuning.backoff ? { backoff: tuning.backoff } : {}),
      ...(tuning.fencedBackoffMs !== undefined ? { fencedBackoffMs: tuning.fencedBackoffMs } : {}),
      ...(tuning.healthyAfterMs !== undefined ? { healthyAfterMs: tuning.healthyAfterMs } : {}),
      ...(tuning.renewCheckIntervalMs !== undefined ? { renewCheckIntervalMs: tuning.renewCheckIntervalMs } : {}),
      events: {
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
    this.#provider.onSnapshot((snapshot) => {
      this.#metrics.inputGeneration.set(snapshot.generation);
      this.#relay.snapshotAvailable();
    });
    this.#health = new HealthServer({
      port: config.healthPort,
      ...(tuning.healthHost !== undefined ? { host: tuning.healthHost } : {}),
      status: () => this.status(),
      registry: this.#metrics.registry,
    });
  }

  /** The bound health port (after start). */
  get healthPort(): number {
    return this.#health.port;
  }

  get outputCurrentPath(): string {
    return this.#writer.currentPath;
  }

  /**
   * Restores the last applied output (headless operation), reads the manifests
   * once, opens the health server and starts relaying. Throws
   * MESHRELAY_ERR_INVALID_CONFIG when the manifests dir cannot be read.
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    await this.#writer.restore();
    await this.#provider.start();
    this.#metrics.inputGeneration.set(this.#provider.current?.generation ?? 0);
    await this.#health.start();
    this.#relay.start();
    this.#logger.info({ cluster: this.#config.cluster, healthPort: this.#health.port, servers: this.#config.serverAddresses }, 'relay agent started');
  }

  /** Closes the relay streams, stops watching and closes the health server; idempotent. */
  async stop(): Promise<void> {
    await this.#relay.stop();
    await this.#provider.stop();
    await this.#health.stop();
    this.#logger.info({ cluster: this.#config.cluster }, 'relay agent stopped');
  }

  status(): AgentStatus {
    const input = this.#provider.current;
    return {
      cluster: this.#config.cluster,
      relay: this.#relay.status,
      input: input ? { epoch: input.epoch, generation: input.generation, hash: input.hash, resources: input.resources.length } : undefined,
      heldOutputHash: this.#writer.heldHash,
      problems: this.#provider.problems,
    };
  }

  async #applyOutput(output: AssembledSnapshot): Promise<void> {
    const { cluster } = this.#config;
    const changed = await this.#writer.apply({ cluster, hash: output.hash, provenance: output.provenance, resources: output.resources });
    const fields = { cluster, hash: output.hash, resources: output.resources.length, provenance: output.provenance };
    if (changed) {
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
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `${flag}: cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
}
