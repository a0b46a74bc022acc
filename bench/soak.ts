/**
 * `npm run soak` (or `node --expose-gc bench/soak.ts --minutes N`): churn against a real management
 * server (in-process) and a real redis-server, measuring the heap after a full GC once per round.
 * Each round registers a batch of clusters under names never used before, pushes two snapshots
 * each over mTLS (the second edits a VirtualDestination and an endpoint), pulls and acks its output,
 * lets translation run, then deregisters them all. Also prints the VIP allocations on file. A server that keeps per-cluster state after deregistration grows by a
 * roughly fixed amount per round; one that prunes stays flat. Prints the series and the slope
 * (least squares, bytes per 100 registrations, over the second half of the rounds so warm-up
 * allocations do not count).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  },
});
const MINUTES = Number(values.minutes);
const BATCH = Number(values.batch);
if (!(MINUTES > 0) || !Number.isInteger(BATCH) || BATCH < 1) throw new Error('--minutes must be > 0 and --batch a positive integer');

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc (npm run soak does)');

function resources(cluster: string, edit: number): Resource[] {
  const service = `svc-${cluster}`;
  return [
    buildService({ name: service, namespace: 'soak', ports: [{ name: 'http', port: 8080 }], selector: { app: service } }),
    buildEndpointSlice({ service, namespace: 'soak', ports: [{ name: 'http', port: 8080 }], endpoints: [{ ip: `10.9.${edit}.1` }] }),
    buildVirtualDestination({
      name: `vd-${cluster}-${edit}`, namespace: 'soak', hosts: [`${service}-${edit}.mesh`],
      services: [{ name: service, namespace: 'soak' }], ports: [{ number: 8080, protocol: 'HTTP' }],
    }),
  ];
}

async function churnOne(server: ManagementServer, cluster: string): Promise<void> {
  const { token } = await server.registry.register(cluster, {});
  const id = await register(server, cluster, token);
  const client = new Client(`localhost:${server.relayPort}`, credentials.createSsl(Buffer.from(server.ca.certPem), Buffer.from(id.keyPem), Buffer.from(id.certPem)));
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
    '--relay-host', '127.0.0.1', '--relay-port', '0', '--http-host', '127.0.0.1', '--http-port', '0', '--metrics-port', '0',
    '--state-dir', stateDir, '--safe-start-window', '0', '--translation-debounce', '10', '--replica-name', 'soak-0', '--redis-url', redis.url,
  ]);
  const server = await startManagementServer(config, pino({ level: process.env['SOAK_LOG_LEVEL'] ?? 'silent' }));
  const series: { registrations: number; heapBytes: number }[] = [];
  const deadline = Date.now() + MINUTES * 60_000;
  let registrations = 0;
  try {
    for (let round = 0; Date.now() < deadline; round++) {
      const names = Array.from({ length: BATCH }, (_, i) => `soak-${round}-${i}`);
      for (const name of names) await churnOne(server, name);
      await server.loop.runNow();
      for (const name of names) await server.registry.deregister(name);
      await server.loop.runNow();
      registrations += BATCH;
      const heapBytes = heapAfterGc();
      series.push({ registrations, heapBytes });
      const vips = vipEntries(join(stateDir, 'registry', 'vip-allocations.json'));
      process.stdout.write(`round ${round + 1}\tregistrations ${registrations}\theap ${(heapBytes / 1048576).toFixed(2)} MiB\tVIP allocations ${vips}\n`);
    }
  } finally {
    await server.stop();
    await redis.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
  const tail = series.slice(Math.floor(series.length / 2)).map((p) => ({ x: p.registrations, y: p.heapBytes }));
  const perHundred = slope(tail) * 100;
  process.stdout.write(`rounds ${series.length}, registrations ${registrations}\n`);
  process.stdout.write(`heap slope over the second half: ${(perHundred / 1024).toFixed(1)} KiB per 100 registrations\n`);
}

await main();
