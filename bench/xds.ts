/**
 * `npm run bench -- --xds`: what the agent's ADS server costs, for the output of one cluster of
 * tier S and of tier M. The real `AdsServer` runs in a process of its own (bench/xds-server-child.ts)
 * on cluster-0's applied output (translated here from the tier's workload) and discovered input.
 * N streams connect before it has a config: a few real grpc-js-xds clients (processes) and raw
 * ADS streams (bench/xds-streams.ts), each subscribing explicit names as a gRPC client does and
 * ACKing. Then, timed in the server process: the first full push (every stream ACKed all four
 * types: the baseline), and repeated one-endpoint changes (every stream ACKed the new endpoints).
 * Bytes are counted on the raw streams; RSS is the server process's, after a full GC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { MeshrelayError } from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { spawnProcess, type ProcessHandle } from '@meshrelay/testkit';
import { describeMachine } from './report.ts';
import { writeResultsSection } from './results-file.ts';
import { TIERS, generateWorkload, serviceName, serviceNamespace, type WorkloadShape } from './workload.ts';
import { renderXdsSection } from './xds-report.ts';
import type { DialTarget, ServerCommand, ServerEvent } from './xds-server-child.ts';
import { RawAdsStream, type Subscription } from './xds-streams.ts';

export interface XdsBenchOptions {
  /** ADS streams in all (the RSS figure is per stream of these). */
  readonly streams: number;
  /** Of which real grpc-js-xds client processes. */
  readonly realClients: number;
  readonly changes: number;
  /** Hosts each raw stream subscribes (the changed one among them). */
  readonly hostsPerStream: number;
}

export const XDS_DEFAULTS: XdsBenchOptions = { streams: 100, realClients: 2, changes: 20, hostsPerStream: 5 };

export interface XdsTierResult {
  readonly tier: string;
  readonly shape: WorkloadShape;
  readonly options: XdsBenchOptions;
  readonly outputResources: number;
  readonly discoveredResources: number;
  readonly listeners: number;
  readonly clusters: number;
  readonly changedListener: string;
  readonly buildMs: number;
  readonly fullPushMs: number;
  /** Per raw stream: bytes of the first full push. */
  readonly fullPushBytes: readonly number[];
  /** Per change: ms until every stream ACKed it, and the server's rebuild of the config within it. */
  readonly changeMs: readonly number[];
  readonly changeBuildMs: readonly number[];
  /** Streams that ACKed each change (all of them, or the change failed). */
  readonly ackedPerChange: readonly number[];
  /** Per change and raw stream: bytes received for it. */
  readonly changeBytes: readonly number[];
  readonly rssIdleKiB: number;
  readonly rssStreamsKiB: number;
}

const SERVER_CHILD = new URL('./xds-server-child.ts', import.meta.url);
const CLIENT_CHILD = new URL('./xds-client-child.ts', import.meta.url).pathname;
const CHANGED = 0;

/** Sends commands to the server process and waits for the event each one answers with. */
class ServerProcess {
  readonly child: ChildProcess;
  readonly #queue: ServerEvent[] = [];
  #waiter: ((e: ServerEvent) => void) | undefined;

  constructor() {
    this.child = fork(SERVER_CHILD, [], {
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    this.child.on('message', (e: ServerEvent) => this.#deliver(e));
    // A server that dies answers whatever is awaited with why, instead of leaving the bench hanging.
    this.child.on('exit', (code, signal) =>
      this.#deliver({ t: 'failed', message: `the server process exited (${signal ?? code})` }),
    );
  }

  #deliver(e: ServerEvent): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    if (waiter) waiter(e);
    else this.#queue.push(e);
  }

  next<T extends ServerEvent['t']>(t: T): Promise<Extract<ServerEvent, { t: T }>> {
    const take = (e: ServerEvent): Extract<ServerEvent, { t: T }> => {
      if (e.t === 'failed') throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `xds bench server: ${e.message}`);
      if (e.t !== t)
        throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `xds bench server answered ${e.t}, expected ${t}`);
      return e as Extract<ServerEvent, { t: T }>;
    };
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(take(queued));
    return new Promise((resolve, reject) => {
      this.#waiter = (e) => {
        try {
          resolve(take(e));
        } catch (err) {
          reject(err as Error);
        }
      };
    });
  }

  ask<T extends ServerEvent['t']>(cmd: ServerCommand, t: T): Promise<Extract<ServerEvent, { t: T }>> {
    this.child.send(cmd);
    return this.next(t);
  }

  stop(): Promise<void> {
    if (this.child.exitCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.disconnect();
    });
  }
}

/** cluster-0's applied output and discovered input of `shape` (the whole workload is translated). */
function clusterZero(shape: WorkloadShape): Extract<ServerCommand, { t: 'input' }> {
  const workload = generateWorkload(shape);
  const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  const result = translate({ inputs: workload.inputs, clusters: workload.clusters, vips }, createIstioValidator());
  const output = result.outputs.get('cluster-0');
  const input = workload.inputs.get('cluster-0');
  if (!output || !input)
    throw new MeshrelayError('MESHRELAY_ERR_TRANSLATION', 'the workload gave no output or input for cluster-0');
  return { t: 'input', cluster: 'cluster-0', output: output.resources, discovered: input.resources };
}

/** Stream i's names: the changed host and `n - 1` others, spread over the hosts. */
function subscriptionOf(targets: readonly DialTarget[], changed: DialTarget, i: number, n: number): Subscription {
  const others = targets.filter((t) => t !== changed);
  const picked = [
    changed,
    ...Array.from(
      { length: Math.min(n - 1, others.length) },
      (_, j) => others[(i * (n - 1) + j) % others.length] as DialTarget,
    ),
  ];
  const listeners = picked.map((t) => t.listener);
  const clusters = picked.flatMap((t) => t.clusters);
  return { lds: listeners, rds: listeners, cds: clusters, eds: clusters };
}

function bootstrap(port: number, i: number): string {
  return JSON.stringify({
    xds_servers: [
      { server_uri: `localhost:${port}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
    ],
    // grpc-js-xds 1.14 takes a bootstrap whose node has no locality as no bootstrap at all.
    node: {
      id: `sidecar~127.0.0.1~bench-client-${i}.shop~shop.svc.cluster.local`,
      locality: { region: 'us-east', zone: 'us-east-1a' },
    },
  });
}

/** Runs the xDS bench on cluster-0 of `shape`; every process and stream it opens is closed before it returns. */
export async function runXdsTier(tier: string, shape: WorkloadShape, options: XdsBenchOptions): Promise<XdsTierResult> {
  const input = clusterZero(shape);
  const server = new ServerProcess();
  const raw: RawAdsStream[] = [];
  const clients: ProcessHandle[] = [];
  try {
    const { port } = await server.next('started');
    const built = await server.ask(input, 'built');
    const service = serviceName(CHANGED);
    const changed = built.targets.find((t) => t.listener.startsWith(`${service}.${serviceNamespace(CHANGED)}.svc.`));
    if (!changed)
      throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `no listener for ${service} in cluster-0's xDS config`);
    const rssIdleKiB = (await server.ask({ t: 'rss' }, 'rss')).rssKiB;

    for (let i = 0; i < options.realClients; i++) {
      const env = { ...process.env, GRPC_XDS_BOOTSTRAP_CONFIG: bootstrap(port, i) };
      const proc = await spawnProcess({
        name: `xds-client-${i}`,
        command: process.execPath,
        args: [CLIENT_CHILD, changed.listener],
        env,
      });
      clients.push(proc);
    }
    for (let i = options.realClients; i < options.streams; i++) {
      raw.push(
        new RawAdsStream(
          `localhost:${port}`,
          `sidecar~127.0.0.1~bench-raw-${i}.shop~shop.svc.cluster.local`,
          subscriptionOf(built.targets, changed, i, options.hostsPerStream),
        ),
      );
    }
    await server.ask({ t: 'await-connected', streams: options.streams }, 'connected');
    const served = await server.ask({ t: 'serve' }, 'served');
    const fullPushBytes = raw.map((s) => s.bytes);
    const rssStreamsKiB = (await server.ask({ t: 'rss' }, 'rss')).rssKiB;

    const changeMs: number[] = [];
    const changeBuildMs: number[] = [];
    const ackedPerChange: number[] = [];
    const changeBytes: number[] = [];
    for (let c = 0; c < options.changes; c++) {
      const before = raw.map((s) => s.bytes);
      const done = await server.ask(
        { t: 'change', index: c, service, address: `10.99.${Math.floor(c / 250)}.${(c % 250) + 1}` },
        'changed',
      );
      changeMs.push(done.ms);
      changeBuildMs.push(done.buildMs);
      ackedPerChange.push(done.streams);
      // The server saw every ACK, so every raw stream has received (and counted) the response.
      raw.forEach((s, i) => changeBytes.push(s.bytes - (before[i] as number)));
    }
    return {
      tier,
      shape,
      options,
      outputResources: input.output.length,
      discoveredResources: input.discovered.length,
      listeners: built.listeners,
      clusters: built.clusters,
      changedListener: changed.listener,
      buildMs: built.ms,
      fullPushMs: served.ms,
      fullPushBytes,
      changeMs,
      changeBuildMs,
      ackedPerChange,
      changeBytes,
      rssIdleKiB,
      rssStreamsKiB,
    };
  } finally {
    for (const s of raw) s.close();
    for (const c of clients) await c.stop();
    await server.stop();
  }
}

function wholeNumber(flag: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `--${flag}: "${raw}" is not a whole number ≥ ${min}`);
  return Number(raw);
}

/**
 * `npm run bench -- --xds [--tiers S,M] [--streams 100] [--real-clients 2] [--changes 20]`:
 * runs the tiers one after the other and writes the `xds` section of `resultsPath`.
 */
export async function runXdsBench(argv: readonly string[], resultsPath: string): Promise<string> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      tiers: { type: 'string' },
      streams: { type: 'string' },
      'real-clients': { type: 'string' },
      changes: { type: 'string' },
    },
  });
  const tiers = (values.tiers ?? 'S,M').split(',');
  for (const t of tiers)
    if (TIERS[t] === undefined)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `--tiers: "${t}" is not one of ${Object.keys(TIERS).join(', ')}`,
      );
  const streams = wholeNumber('streams', values.streams, XDS_DEFAULTS.streams, 1);
  const options: XdsBenchOptions = {
    ...XDS_DEFAULTS,
    streams,
    realClients: Math.min(streams, wholeNumber('real-clients', values['real-clients'], XDS_DEFAULTS.realClients, 0)),
    changes: wholeNumber('changes', values.changes, XDS_DEFAULTS.changes, 1),
  };
  const startedAt = new Date();
  const machine = describeMachine();
  const start = process.hrtime.bigint();
  const results: XdsTierResult[] = [];
  for (const tier of tiers) {
    console.error(`xds bench: tier ${tier}…`);
    results.push(await runXdsTier(tier, TIERS[tier] as WorkloadShape, options));
  }
  const text = renderXdsSection({
    startedAt,
    totalSeconds: Number(process.hrtime.bigint() - start) / 1e9,
    machine,
    loadAverage1mAtEnd: loadavg()[0] ?? 0,
    tiers: results,
  });
  writeResultsSection(resultsPath, 'xds', text);
  console.log(text);
  console.error(`wrote ${resultsPath}`);
  return text;
}
