/**
 * The agent's ADS server (the real `AdsServer`) in a process of its own, so that its memory is
 * measured apart from the clients'. Driven by the xDS bench over IPC (see bench/xds.ts):
 * `input` builds the config of one cluster without serving it (streams opened meanwhile are
 * held, as the agent holds them before its first config); `serve` sets it and times until
 * every stream ACKed all four types; `change` moves one endpoint and times until every stream
 * ACKed the new endpoints; `rss` reports resident memory after a full GC.
 */
import { Registry } from 'prom-client';
import { pino } from 'pino';
import { AdsServer, type ProxyStatus } from '@meshrelay/agent';
import type { Resource } from '@meshrelay/api';
import { buildXdsConfig, type XdsConfig } from '@meshrelay/xds';
import { applyEndpointChange } from './tier/endpoint-change.ts';
import { procStatus } from './proc-stats.ts';

export type ServerCommand =
  | {
      readonly t: 'input';
      readonly cluster: string;
      readonly output: readonly Resource[];
      readonly discovered: readonly Resource[];
    }
  | { readonly t: 'rss' }
  | { readonly t: 'await-connected'; readonly streams: number }
  | { readonly t: 'serve' }
  | { readonly t: 'change'; readonly index: number; readonly service: string; readonly address: string };

/** One host a client can dial: its listener (= route) name and the clusters (= EDS names) of that port. */
export interface DialTarget {
  readonly listener: string;
  readonly clusters: readonly string[];
}

export type ServerEvent =
  | { readonly t: 'started'; readonly port: number }
  | {
      readonly t: 'built';
      readonly ms: number;
      readonly targets: readonly DialTarget[];
      readonly listeners: number;
      readonly clusters: number;
    }
  | { readonly t: 'rss'; readonly rssKiB: number }
  | { readonly t: 'connected' }
  | { readonly t: 'served'; readonly ms: number }
  | { readonly t: 'changed'; readonly buildMs: number; readonly ms: number; readonly streams: number }
  | { readonly t: 'failed'; readonly message: string };

const WAIT_LIMIT_MS = Number(process.env['XDS_BENCH_WAIT_MS'] ?? 120_000);
const TYPES = ['lds', 'rds', 'cds', 'eds'] as const;

const send = (event: ServerEvent): void => void process.send?.(event);
const server = new AdsServer({
  port: 0,
  host: '127.0.0.1',
  registry: new Registry(),
  logger: pino({ level: 'silent' }),
});
let cluster = '';
let output: readonly Resource[] = [];
let discovered: readonly Resource[] = [];
let built: XdsConfig | undefined;

function msSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Resolves once `done(proxies)` holds, checked at every stream event; rejects after WAIT_LIMIT_MS. */
function until(done: (proxies: ProxyStatus[]) => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!done(server.proxies())) return;
      clearTimeout(timer);
      off();
      resolve();
    };
    const timer = setTimeout(() => {
      off();
      reject(
        new Error(
          `${what} did not happen within ${WAIT_LIMIT_MS} ms; streams: ${JSON.stringify(server.proxies().map((p) => ({ node: p.nodeId, subscribed: Object.keys(p.subscribed), acked: p.ackedVersion })))}`,
        ),
      );
    }, WAIT_LIMIT_MS);
    const off = server.onChange(check);
    check();
  });
}

/** Each host:port listener with the clusters of that port (every subset): what a client dialling it subscribes. */
function dialTargets(config: XdsConfig): DialTarget[] {
  return [...config.listeners.keys()].map((listener) => {
    const at = listener.lastIndexOf(':');
    const prefix = `outbound|${listener.slice(at + 1)}|`;
    const suffix = `|${listener.slice(0, at)}`;
    return {
      listener,
      clusters: [...config.clusters.keys()].filter((c) => c.startsWith(prefix) && c.endsWith(suffix)),
    };
  });
}

async function handle(cmd: ServerCommand): Promise<void> {
  if (cmd.t === 'input') {
    ({ cluster, output, discovered } = cmd);
    const start = process.hrtime.bigint();
    built = buildXdsConfig({ cluster, output, discovered });
    send({
      t: 'built',
      ms: msSince(start),
      targets: dialTargets(built),
      listeners: built.listeners.size,
      clusters: built.clusters.size,
    });
  } else if (cmd.t === 'rss') {
    // Twice: the first pass may only schedule finalisers.
    for (let i = 0; i < 2; i++) globalThis.gc?.();
    send({ t: 'rss', rssKiB: procStatus(process.pid).rssKiB });
  } else if (cmd.t === 'await-connected') {
    await until(
      (ps) => ps.length >= cmd.streams && ps.every((p) => (p.subscribed['lds'] ?? []).length > 0),
      `${cmd.streams} streams subscribing`,
    );
    send({ t: 'connected' });
  } else if (cmd.t === 'serve') {
    const start = process.hrtime.bigint();
    server.setConfig(built as XdsConfig);
    await until(
      (ps) => ps.every((p) => TYPES.every((type) => (p.ackedVersion[type] ?? '') !== '')),
      'every stream ACKing all four types',
    );
    send({ t: 'served', ms: msSince(start) });
  } else {
    const before = new Map(server.proxies().map((p) => [p.nodeId, p.ackedVersion['eds'] ?? '']));
    const start = process.hrtime.bigint();
    discovered = applyEndpointChange(discovered, {
      index: cmd.index,
      cluster,
      service: cmd.service,
      address: cmd.address,
    });
    const next = buildXdsConfig({ cluster, output, discovered });
    const buildMs = msSince(start);
    server.setConfig(next);
    await until(
      (ps) => ps.every((p) => (p.ackedVersion['eds'] ?? '') !== before.get(p.nodeId)),
      `every stream ACKing change ${cmd.index}`,
    );
    send({ t: 'changed', buildMs, ms: msSince(start), streams: before.size });
  }
}

process.on('message', (cmd: ServerCommand) => {
  handle(cmd).catch((err: unknown) => send({ t: 'failed', message: err instanceof Error ? err.message : String(err) }));
});
process.on('disconnect', () => void server.stop().then(() => process.exit(0)));
await server.start();
send({ t: 'started', port: server.port });
