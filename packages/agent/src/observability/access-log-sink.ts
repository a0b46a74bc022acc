import { createRequire } from 'node:module';
import path from 'node:path';
import {
  Server,
  ServerCredentials,
  loadPackageDefinition,
  type GrpcObject,
  type ServerReadableStream,
  type ServiceClientConstructor,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { loadSync, type Options as ProtoLoaderOptions } from '@grpc/proto-loader';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { MeshrelayError } from '@meshrelay/api';
import { httpLabels, tcpLabels, type StreamAccessLogsMessage } from './access-log-entry.ts';

/** How proto-loader decodes the access-log messages (the shapes access-log-entry.ts reads). */
export const ACCESS_LOG_PROTO_OPTIONS: ProtoLoaderOptions = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
};

const ALS_PROTO = 'envoy/service/accesslog/v3/als.proto';
const INCLUDE_DIRS = ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'];

/**
 * Envoy's API protos as @grpc/grpc-js-xds ships them (its `deps/` folder), so
 * the sink and its tests speak exactly Envoy's wire format without vendoring it.
 */
export function envoyProtoIncludeDirs(): string[] {
  const require = createRequire(import.meta.url);
  const root = path.join(path.dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
  return INCLUDE_DIRS.map((dir) => path.join(root, dir));
}

/** The AccessLogService client/service constructor loaded from Envoy's protos. */
export function loadAccessLogService(): ServiceClientConstructor {
  const definition = loadSync(ALS_PROTO, { ...ACCESS_LOG_PROTO_OPTIONS, includeDirs: envoyProtoIncludeDirs() });
  const grpc = loadPackageDefinition(definition);
  const service = (((grpc['envoy'] as GrpcObject)['service'] as GrpcObject)['accesslog'] as GrpcObject)[
    'v3'
  ] as GrpcObject;
  return service['AccessLogService'] as ServiceClientConstructor;
}

export interface AccessLogSinkOptions {
  readonly port: number;
  readonly host?: string;
  readonly registry: Registry;
  readonly logger: Logger;
  /** Distinct (source, destination) pairs counted before new ones fold into `other` (default 500). */
  readonly maxLabelSets?: number;
  /** Called with each entry's destination (before label bounding): the hosts the cluster uses. */
  readonly onDestination?: (destination: string) => void;
}

export const OTHER = 'other';

/**
 * The access-log sink every agent replica serves: Envoy's
 * `envoy.service.accesslog.v3.AccessLogService/StreamAccessLogs` (plaintext
 * gRPC, for the sidecars of this cluster). It keeps no log lines, only counts:
 * HTTP entries into `relay_agent_access_log_requests_total{source, destination,
 * response_code}`, TCP entries into `relay_agent_access_log_connections_total{source,
 * destination}` (labels: see access-log-entry.ts). Label cardinality is bounded:
 * once `maxLabelSets` distinct (source, destination) pairs were seen, new pairs
 * are counted as source=`other`, destination=`other` (response_code is kept: it
 * has at most 501 values).
 */
export class AccessLogSink {
  readonly #opts: AccessLogSinkOptions;
  readonly #server = new Server();
  readonly #requests: Counter<'source' | 'destination' | 'response_code'>;
  readonly #connections: Counter<'source' | 'destination'>;
  readonly #pairs = new Set<string>();
  #port: number | undefined;
  #stopped = false;

  constructor(options: AccessLogSinkOptions) {
    this.#opts = options;
    const registers = [options.registry];
    this.#requests = new Counter({
      name: 'relay_agent_access_log_requests_total',
      help: 'HTTP requests reported by Envoy access logs, by downstream identity, upstream and response code',
      labelNames: ['source', 'destination', 'response_code'],
      registers,
    });
    this.#connections = new Counter({
      name: 'relay_agent_access_log_connections_total',
      help: 'TCP connections reported by Envoy access logs, by downstream identity and upstream',
      labelNames: ['source', 'destination'],
      registers,
    });
    this.#server.addService(loadAccessLogService().service, {
      StreamAccessLogs: (
        call: ServerReadableStream<StreamAccessLogsMessage, object>,
        callback: sendUnaryData<object>,
      ) => this.#stream(call, callback),
    });
  }

  /** The bound port (after start), useful with port 0. */
  get port(): number {
    if (this.#port === undefined) throw new Error('access-log sink not started');
    return this.#port;
  }

  /** Binds the port. Throws MESHRELAY_ERR_INVALID_CONFIG when it cannot (e.g. in use). */
  async start(): Promise<void> {
    const address = `${this.#opts.host ?? '0.0.0.0'}:${this.#opts.port}`;
    this.#port = await new Promise<number>((resolve, reject) => {
      this.#server.bindAsync(address, ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      );
    }).catch((err: unknown) => {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `--access-log-host/--access-log-port: cannot listen on ${address}: ${(err as Error).message}`,
        { cause: err },
      );
    });
    this.#opts.logger.info({ port: this.#port }, 'access-log sink listening');
  }

  /** Stops accepting streams and ends the open ones; idempotent. */
  async stop(): Promise<void> {
    if (this.#port === undefined || this.#stopped) return;
    this.#stopped = true;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => this.#server.forceShutdown(), 1_000);
      this.#server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  /** Counts one message's entries (exposed for callers that receive logs another way). */
  count(message: StreamAccessLogsMessage): void {
    for (const entry of message.http_logs?.log_entry ?? []) {
      const labels = httpLabels(entry);
      this.#opts.onDestination?.(labels.destination);
      this.#requests.inc({ ...this.#bounded(labels.source, labels.destination), response_code: labels.response_code });
    }
    for (const entry of message.tcp_logs?.log_entry ?? []) {
      const labels = tcpLabels(entry);
      this.#opts.onDestination?.(labels.destination);
      this.#connections.inc(this.#bounded(labels.source, labels.destination));
    }
  }

  #bounded(source: string, destination: string): { source: string; destination: string } {
    const key = `${source}\u0000${destination}`;
    if (this.#pairs.has(key)) return { source, destination };
    if (this.#pairs.size >= (this.#opts.maxLabelSets ?? 500)) return { source: OTHER, destination: OTHER };
    this.#pairs.add(key);
    return { source, destination };
  }

  #stream(call: ServerReadableStream<StreamAccessLogsMessage, object>, callback: sendUnaryData<object>): void {
    let node: string | undefined;
    call.on('data', (message: StreamAccessLogsMessage) => {
      node ??= message.identifier?.node?.id;
      this.count(message);
    });
    call.on('end', () => callback(null, {}));
    call.on('error', (err) => this.#opts.logger.debug({ err, node }, 'access-log stream ended with an error'));
  }
}
