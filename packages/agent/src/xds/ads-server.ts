import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { MeshrelayError } from '@meshrelay/api';
import { buildXdsConfig, type XdsConfig, type XdsInput } from '@meshrelay/xds';
import { adsServiceDefinition, type DiscoveryRequest } from './ads-protos.ts';
import { AdsStream, TYPE_LABELS, type AdsCall, type ProxyStatus } from './ads-stream.ts';

export interface AdsServerOptions {
  /** TCP port (0 with no socket = off is the caller's decision; 0 here binds an ephemeral port). */
  readonly port?: number;
  readonly host?: string;
  /** A Unix socket path served in addition to (or instead of) TCP. */
  readonly socket?: string;
  readonly registry: Registry;
  readonly logger: Logger;
}

const EMPTY: XdsConfig = buildXdsConfig({ cluster: '', output: [], discovered: [] });

/**
 * The agent's aggregated discovery service (state of the world, plaintext) for
 * proxyless gRPC clients and Envoy: every stream gets the resources it subscribed
 * from the current config; a new config reaches only the streams whose subscribed
 * resources changed.
 */
export class AdsServer {
  readonly #opts: AdsServerOptions;
  readonly #server = new Server();
  readonly #streams = new Set<AdsStream>();
  readonly #connected: Gauge;
  readonly #pushes: Counter<'type'>;
  readonly #nacks: Counter<'type'>;
  readonly #duration: Histogram;
  readonly #listeners = new Set<() => void>();
  /** Undefined until the first config: streams are held, never answered with an empty config. */
  #config: XdsConfig | undefined;
  /** Why new streams are refused (this replica does not lead); undefined while it serves. */
  #refusal: string | undefined;
  #addresses: string[] = [];
  #stopped = false;

  constructor(opts: AdsServerOptions) {
    this.#opts = opts;
    const registers = [opts.registry];
    this.#connected = new Gauge({ name: 'meshrelay_xds_connected_proxies', help: 'ADS streams open now.', registers });
    this.#pushes = new Counter({
      name: 'meshrelay_xds_pushes_total',
      help: 'DiscoveryResponses sent, by type (lds, rds, cds, eds).',
      labelNames: ['type'],
      registers,
    });
    this.#nacks = new Counter({
      name: 'meshrelay_xds_nacks_total',
      help: 'Responses clients rejected, by type.',
      labelNames: ['type'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'meshrelay_xds_push_duration_seconds',
      help: 'Time to build and send one DiscoveryResponse.',
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5],
      registers,
    });
    for (const type of Object.values(TYPE_LABELS)) {
      this.#pushes.inc({ type }, 0);
      this.#nacks.inc({ type }, 0);
    }
    this.#server.addService(adsServiceDefinition(), {
      StreamAggregatedResources: (call: AdsCall) => this.#serve(call),
      DeltaAggregatedResources: (call: AdsCall) =>
        call.emit('error', { code: status.UNIMPLEMENTED, details: 'delta xDS is not served; use state of the world' }),
    });
  }

  /** Binds TCP and/or the socket; returns the addresses (`host:port`, `unix:PATH`). */
  async start(): Promise<readonly string[]> {
    const wanted: string[] = [];
    if (this.#opts.port !== undefined) wanted.push(`${this.#opts.host ?? '127.0.0.1'}:${this.#opts.port}`);
    if (this.#opts.socket !== undefined) wanted.push(`unix:${this.#opts.socket}`);
    for (const address of wanted) {
      const port = await new Promise<number>((resolve, reject) => {
        this.#server.bindAsync(address, ServerCredentials.createInsecure(), (err, p) =>
          err ? reject(err) : resolve(p),
        );
      }).catch((err: unknown) => {
        throw new MeshrelayError(
          'MESHRELAY_ERR_INVALID_CONFIG',
          `--xds-host/--xds-port/--xds-socket: cannot listen on ${address}: ${(err as Error).message}`,
          { cause: err },
        );
      });
      const bound = address.startsWith('unix:') ? address : `${this.#opts.host ?? '127.0.0.1'}:${port}`;
      this.#addresses.push(bound);
      this.#opts.logger.info({ address: bound }, 'xds server listening');
    }
    return this.#addresses;
  }

  get addresses(): readonly string[] {
    return this.#addresses;
  }

  /** The bound TCP port (0 when only the socket is served). */
  get port(): number {
    const tcp = this.#addresses.find((a) => !a.startsWith('unix:'));
    return tcp === undefined ? 0 : Number(tcp.slice(tcp.lastIndexOf(':') + 1));
  }

  /** The config streams are served from now (empty before the first). */
  get config(): XdsConfig {
    return this.#config ?? EMPTY;
  }

  /**
   * Whether this replica leads its cluster. A follower holds no config of its own, so rather
   * than hold a proxy on a stream it can never answer, it refuses streams (UNAVAILABLE) and
   * ends the open ones: the proxy keeps what it has and reconnects until it reaches the leader.
   */
  setLeading(leading: boolean): void {
    if (leading) {
      this.#refusal = undefined;
      return;
    }
    this.#refusal = 'this agent replica does not lead its cluster and serves no xDS; reconnect to reach the leader';
    for (const stream of [...this.#streams]) stream.end(this.#refusal);
  }

  /** Translates `input` and serves the result (see `update`). */
  updateFrom(input: XdsInput): XdsConfig {
    const config = buildXdsConfig(input);
    if (config.findings.length > 0) this.#opts.logger.warn({ findings: config.findings }, 'xds findings');
    this.setConfig(config);
    return config;
  }

  /** Serves `config` from now on; pushes to each stream only the types whose resources changed. */
  setConfig(config: XdsConfig): void {
    this.#config = config;
    for (const stream of this.#streams) stream.update(config);
    this.#changed();
  }

  /**
   * Calls `listener` (synchronously; it must not throw) whenever what `proxies()` or the
   * config's findings show may have changed: a stream opened or ended, a request (ACK,
   * NACK, subscription) arrived, a config was set. Returns the unsubscribe function.
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  /** What `/xds/proxies` shows: one entry per open stream. */
  proxies(): ProxyStatus[] {
    return [...this.#streams].map((s) => s.status());
  }

  /** Stops accepting streams and ends the open ones; idempotent. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => this.#server.forceShutdown(), 1_000);
      this.#server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  #serve(call: AdsCall): void {
    if (this.#refusal !== undefined) {
      call.emit('error', { code: status.UNAVAILABLE, details: this.#refusal });
      return;
    }
    const stream = new AdsStream(call, this.#config, {
      onPush: (typeUrl, seconds) => {
        this.#pushes.inc({ type: TYPE_LABELS[typeUrl] });
        this.#duration.observe(seconds);
      },
      onNack: (record) => {
        this.#nacks.inc({ type: TYPE_LABELS[record.typeUrl] });
        this.#opts.logger.warn({ node: stream.nodeId, ...record }, 'xds NACK: the client keeps its last good config');
      },
    });
    this.#streams.add(stream);
    this.#connected.set(this.#streams.size);
    const end = (): void => {
      if (!this.#streams.delete(stream)) return;
      this.#connected.set(this.#streams.size);
      this.#changed();
    };
    call.on('data', (req: DiscoveryRequest) => {
      // The node names the proxy in /xds/proxies and decides its endpoints' priorities.
      if (stream.nodeId === '' && (req.node === undefined || req.node === null || !req.node.id)) {
        end();
        call.emit('error', {
          code: status.INVALID_ARGUMENT,
          details: 'the first DiscoveryRequest of a stream must carry node.id',
        });
        return;
      }
      stream.receive(req);
      this.#changed();
    });
    call.on('end', () => {
      end();
      call.end();
    });
    call.on('error', end);
    call.on('cancelled', end);
    call.on('close', end);
  }
}
