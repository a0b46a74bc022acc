/**
 * `node bench/reconnect-storm.ts [--agents 200] [--workers 4] [--down-ms 10000] [--admit-rate 50] [--no-probe]`
 *
 * A reconnect storm against a real meshrelay-server process: N agents (RelayClients, split over a
 * few worker processes) connect and get their snapshots acked; the server is killed with SIGKILL,
 * stays down for --down-ms, and is started again on the same ports and state. Prints the time from
 * the restarted server answering /healthz until every agent had a snapshot acked again, and the
 * most sessions the restarted server admitted in any one second (from its "relay session admitted"
 * log lines). `--no-probe` turns the agents' reachability probe off and a huge --admit-rate turns
 * the server's pacing off, which is how the relay behaved before both existed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { buildInputSnapshot } from '@meshrelay/api';
import { FileCredentialStore } from '../packages/agent/src/credentials/credential-store.ts';
import { RelayClient } from '../packages/agent/src/relay/relay-client.ts';
import {
  freeServerPorts,
  registerClusters,
  serverArgs,
  startServerProcess,
  stopChild,
  waitHealthy,
} from './tier/processes.ts';
const ADMIN_TOKEN = 'bench-reconnect-storm-admin-token';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '200' },
    workers: { type: 'string', default: '4' },
    'down-ms': { type: 'string', default: '10000' },
    'admit-rate': { type: 'string', default: '50' },
    'no-probe': { type: 'boolean', default: false },
    worker: { type: 'boolean', default: false },
  },
});

interface WorkerPlan {
  readonly address: string;
  readonly caPem: string;
  readonly probe: boolean;
  readonly clusters: ReadonlyArray<{ readonly name: string; readonly token: string }>;
}

/** Worker mode: runs one RelayClient per cluster and prints a JSON line for every ack. */
async function runWorker(): Promise<void> {
  const plan = JSON.parse(process.env['STORM_PLAN'] ?? '{}') as WorkerPlan;
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-storm-worker-'));
  const logger = pino({ level: 'silent' });
  const clients = plan.clusters.map(({ name, token }) => {
    const snapshot = buildInputSnapshot({ cluster: name, epoch: 'storm', generation: 1, resources: [] });
    return new RelayClient({
      cluster: name,
      serverAddresses: [plan.address],
      rootCaPem: () => Promise.resolve(plan.caPem),
      token: () => Promise.resolve(token),
      credentials: new FileCredentialStore({ stateDir: join(dir, name), cluster: name, logger }),
      latestSnapshot: () => snapshot,
      heldOutput: () => undefined,
      applyOutput: () => Promise.resolve(),
      heartbeatIntervalMs: 5000,
      heartbeatTimeoutMs: 15_000,
      maxSnapshotBytes: 16 * 1024 * 1024,
      logger,
      // Off = the probe never runs: every wait is at most one probe interval long only above ~1 day.
      ...(plan.probe ? {} : { reachabilityProbeMs: 86_400_000 }),
      events: { onSnapshotAcked: () => process.stdout.write(`${JSON.stringify({ acked: name, at: Date.now() })}\n`) },
    });
  });
  for (const c of clients) c.start();
  process.on('SIGTERM', () => {
    void Promise.all(clients.map((c) => c.stop())).then(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
}

function mostInOneSecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    while ((sorted[to] as number) - (sorted[from] as number) >= 1000) from++;
    most = Math.max(most, to - from + 1);
  }
  return most;
}

async function runStorm(): Promise<void> {
  const agents = Number(values.agents);
  const workers = Number(values.workers);
  const downMs = Number(values['down-ms']);
  const stateDir = mkdtempSync(join(tmpdir(), 'meshrelay-storm-server-'));
  const ports = await freeServerPorts();
  const { relayPort, httpPort } = ports;
  const args = serverArgs(ports, stateDir, ADMIN_TOKEN, [
    '--safe-start-window',
    '0',
    '--relay-admit-rate',
    String(values['admit-rate']),
    '--max-connections-per-peer',
    '10000',
  ]);
  let server = startServerProcess(args);
  const children: ChildProcess[] = [];
  try {
    await waitHealthy(server, httpPort, 60_000);
    const { clusters, caPem } = await registerClusters(
      httpPort,
      ADMIN_TOKEN,
      Array.from({ length: agents }, (_, i) => `storm-${i}`),
    );
    const lastAck = new Map<string, number>();
    for (let w = 0; w < workers; w++) {
      const plan: WorkerPlan = {
        address: `localhost:${relayPort}`,
        caPem,
        probe: !values['no-probe'],
        clusters: clusters.filter((_, i) => i % workers === w),
      };
      const child = spawn(process.execPath, [import.meta.filename, '--worker'], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, STORM_PLAN: JSON.stringify(plan) },
      });
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        const ack = JSON.parse(line) as { acked: string; at: number };
        lastAck.set(ack.acked, ack.at);
      });
      children.push(child);
    }
    const allAckedAfter = async (t: number) => {
      while (clusters.some((c) => (lastAck.get(c.name) ?? 0) <= t)) await sleep(20);
      return Math.max(...clusters.map((c) => lastAck.get(c.name) ?? 0));
    };
    await allAckedAfter(0);
    console.error(`all ${agents} agents connected; killing the server in 11 s`);
    // Let every session pass the agent's "healthy" mark, as in a running plane.
    await sleep(11_000);
    server.proc.kill('SIGKILL');
    const killedAt = Date.now();
    await sleep(downMs);
    server = startServerProcess(args);
    const upAt = await waitHealthy(server, httpPort, 60_000);
    const lastAt = await allAckedAfter(killedAt);
    console.log(
      JSON.stringify({
        agents,
        workers,
        downMs,
        admitRate: Number(values['admit-rate']),
        probe: !values['no-probe'],
        resyncAfterUpMs: lastAt - upAt,
        maxAdmittedInOneSecond: mostInOneSecond(server.admittedAt),
        admitted: server.admittedAt.length,
      }),
    );
  } finally {
    await Promise.all(children.map((c) => stopChild(c)));
    await stopChild(server.proc);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (values.worker) await runWorker();
else await runStorm();
