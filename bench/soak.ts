/**
 * `npm run soak` (or `node --expose-gc bench/soak.ts --minutes N`): churn against a real management
 * server (in-process) and a real redis-server, measuring the heap after a full GC once per round.
 * Each round registers a batch of clusters under names never used before, pushes two snapshots
 * each over mTLS (the second edits a VirtualDestination and an endpoint), pulls and acks its output,
 * lets translation run, then deregisters them all. Also prints the VIP allocations on file and the
 * timers pending in the process. A server that keeps per-cluster state after deregistration grows
 * by a roughly fixed amount per round; one that prunes stays flat. Prints the series, the slope
 * (least squares, bytes per 100 registrations) over the first and the second half of the rounds
 * (warm-up allocations land in the first), and the server's per-cluster structures left at the end
 * (all 0 when deregistration prunes everything). `--write` also writes the figures to bench/SOAK.md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, credentials } from '@grpc/grpc-js';
import { pino } from 'pino';
import type { Resource } from '@meshrelay/api';
import { parseServerConfig, startManagementServer, type ManagementServer } from '@meshrelay/mgmt-server';
import { buildEndpointSlice, buildService, buildVirtualDestination, startRedisServer } from '@meshrelay/testkit';
import { next, openPull, openPush, pushSnapshot, register } from '../packages/mgmt-server/test/harness.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '3' },
    batch: { type: 'string', default: '10' },
    write: { type: 'boolean', default: false },
  },
});
const MINUTES = Number(values.minutes);
const BATCH = Number(values.batch);
if (!(MINUTES > 0) || !Number.isInteger(BATCH) || BATCH < 1)
  throw new Error('--minutes must be > 0 and --batch a positive integer');

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc (npm run soak does)');

function resources(cluster: string, edit: number): Resource[] {
  const service = `svc-${cluster}`;
  return [
    buildService({
      name: service,
      namespace: 'soak',
      ports: [{ name: 'http', port: 8080 }],
      selector: { app: service },
    }),
    buildEndpointSlice({
      service,
      namespace: 'soak',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ ip: `10.9.${edit}.1` }],
    }),
    buildVirtualDestination({
      name: `vd-${cluster}-${edit}`,
      namespace: 'soak',
      hosts: [`${service}-${edit}.mesh`],
      services: [{ name: service, namespace: 'soak' }],
      ports: [{ number: 8080, protocol: 'HTTP' }],
    }),
  ];
}

async function churnOne(server: ManagementServer, cluster: string): Promise<void> {
  const { token } = await server.registry.register(cluster, {});
  const id = await register(server, cluster, token);
  const client = new Client(
    `localhost:${server.relayPort}`,
    credentials.createSsl(Buffer.from(server.ca.certPem), Buffer.from(id.keyPem), Buffer.from(id.certPem)),
  );
  try {
    const stream = openPush(client);
    for (const generation of [1, 2]) {
      pushSnapshot(stream, cluster, generation, resources(cluster, generation));
      await next(stream, (m) => m.ack ?? undefined, 15_000);
    }
    stream.end();
    const pull = openPull(client);
    pull.write({ hello: { heldHash: '' } });
    const header = await next(pull, (m) => m.header ?? undefined, 15_000);
    pull.write({ ack: { hash: header.hash, accepted: true } });
    pull.end();
  } finally {
    client.close();
  }
}

function vipEntries(path: string): number {
  return existsSync(path) ? Object.keys(JSON.parse(readFileSync(path, 'utf8')) as object).length : 0;
}

function heapAfterGc(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const stateDir = mkdtempSync(join(tmpdir(), 'meshrelay-soak-'));
  const config = parseServerConfig([
    '--relay-host',
    '127.0.0.1',
    '--relay-port',
    '0',
    '--http-host',
    '127.0.0.1',
    '--http-port',
    '0',
    '--metrics-port',
    '0',
    '--state-dir',
    stateDir,
    '--safe-start-window',
    '0',
    '--translation-debounce',
    '10',
    '--replica-name',
    'soak-0',
    '--redis-url',
    redis.url,
  ]);
  const server = await startManagementServer(config, pino({ level: process.env['SOAK_LOG_LEVEL'] ?? 'silent' }));
  const series: Sample[] = [];
  const startedAt = Date.now();
  const deadline = Date.now() + MINUTES * 60_000;
  let registrations = 0;
  let left: Readonly<Record<string, number>> = {};
  try {
    for (let round = 0; Date.now() < deadline; round++) {
      const names = Array.from({ length: BATCH }, (_, i) => `soak-${round}-${i}`);
      for (const name of names) await churnOne(server, name);
      await server.loop.runNow();
      for (const name of names) await server.registry.deregister(name);
      await server.loop.runNow();
      registrations += BATCH;
      const heapBytes = heapAfterGc();
      const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      series.push({ seconds: Math.round((Date.now() - startedAt) / 1000), registrations, heapBytes, timers });
      const vips = vipEntries(join(stateDir, 'registry', 'vip-allocations.json'));
      process.stdout.write(
        `round ${round + 1}\tregistrations ${registrations}\theap ${(heapBytes / 1048576).toFixed(2)} MiB\ttimers ${timers}\tVIP allocations ${vips}\n`,
      );
    }
    left = await settledCounts(server);
  } finally {
    await server.stop();
    await redis.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
  const half = Math.floor(series.length / 2);
  const kibPerHundred = (part: readonly Sample[]): string =>
    ((slope(part.map((p) => ({ x: p.registrations, y: p.heapBytes }))) * 100) / 1024).toFixed(1);
  const summary = [
    `rounds ${series.length}, registrations ${registrations}, ${MINUTES} min, batch ${BATCH}`,
    `heap slope over the first half: ${kibPerHundred(series.slice(0, half))} KiB per 100 registrations`,
    `heap slope over the second half: ${kibPerHundred(series.slice(half))} KiB per 100 registrations`,
    `per-cluster state left after the last deregistration: ${JSON.stringify(left)}`,
  ];
  process.stdout.write(`${summary.join('\n')}\n`);
  if (values.write) writeFileSync(join(import.meta.dirname, 'SOAK.md'), soakReport(series, summary));
}

interface Sample {
  readonly seconds: number;
  readonly registrations: number;
  readonly heapBytes: number;
  readonly timers: number;
}

/** The server's per-cluster structures once its writes settled (up to 10 s). */
async function settledCounts(server: ManagementServer): Promise<Readonly<Record<string, number>>> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && Object.values(server.debugCounts()).some((n) => n !== 0)) {
    await server.loop.runNow();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return server.debugCounts();
}

/** bench/SOAK.md: the summary and the heap at about 30 points of the run. */
function soakReport(series: readonly Sample[], summary: readonly string[]): string {
  const every = Math.max(1, Math.ceil(series.length / 30));
  const rows = series
    .filter((_, i) => i % every === 0 || i === series.length - 1)
    .map((p) => `| ${p.seconds} | ${p.registrations} | ${(p.heapBytes / 1048576).toFixed(2)} | ${p.timers} |`);
  return [
    '# Soak: heap under registration churn',
    '',
    'Written by `npm run soak -- --minutes N --write` (bench/soak.ts): an in-process management server and a real',
    'redis-server; each round registers a batch of new clusters, pushes two snapshots each, pulls and acks the',
    'output, deregisters them. Heap is measured after two forced GCs.',
    '',
    ...summary.map((line) => `- ${line}`),
    '',
    '| seconds | registrations | heap MiB | pending timers |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

await main();
