/**
 * The real-process part of the tier bench: redis-server, a meshrelay-server child process and the
 * load generators' relay clients; measures cold start, one-endpoint changes, server memory and a
 * kill -9 reconnect storm. Every wait is bounded by its phase's time limit (PhaseRunner).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRedisServer, type RedisServerHandle } from '@meshrelay/testkit';
import { cpuSeconds, procStatus } from '../proc-stats.ts';
import type { Workload } from '../workload.ts';
import { endpointChange, type EndpointChange } from './endpoint-change.ts';
import { RealAgents } from './real-agents.ts';
import { RssSampler, type RssHighWater } from './rss-sampler.ts';
import { kindChangePhases, staggeredStart, type KindChangeSample, type StaggeredStart } from './whole-path.ts';
import { Fleet } from './fleet.ts';
import { provenanceDigest } from './load-generator.ts';
import type { PhaseRunner } from './phases.ts';
import {
  freeServerPorts,
  metricEndingWith,
  registerClusters,
  scrapeMetrics,
  serverArgs,
  startServerProcess,
  stopChild,
  waitHealthy,
  type ServerProcess,
} from './processes.ts';

const ADMIN_TOKEN = 'bench-tier-admin-token-0123456789';

export interface LiveOptions {
  readonly workload: Workload;
  readonly changes: number;
  readonly processes: number;
  /** Quiet time after each change's last apply before the next change (late sends are counted). */
  readonly settleMs: number;
  /** Server flags besides ports, state dir, admin token and Redis (the bench keeps every other default). */
  readonly serverFlags: readonly string[];
  /** Clusters that run a real `meshrelay-agent` process instead of a load generator's relay client. */
  readonly realAgents: readonly string[];
  /** Indexes of the one-endpoint changes (endpointChange) to make: none on a real agent's cluster. */
  readonly changeIndexes: readonly number[];
  /** Changes of each kind (change-kinds.ts), and the clusters they target in turn. */
  readonly kindChanges: number;
  readonly kindTargets: readonly number[];
  /** Window over which the clusters' inputs arrive at the cold start (0: all at once). */
  readonly staggerMs: number;
  /** How long the converged server is left idle before its settled memory is read (see serverMemory). */
  readonly settleIdleMs: number;
}

export interface ColdStart {
  /** From starting the relay clients until every agent applied its first output / its first complete one. */
  readonly firstOutputMs: number;
  readonly completeOutputMs: number;
}

export interface Memory {
  readonly rssBytes: number | undefined;
  readonly heapUsedBytes: number | undefined;
  /** VmHWM of the server process: its RSS high-water mark. */
  readonly rssHighWaterBytes: number | undefined;
  /** Full collections the server ran once idle after a burst of work, so far, and their total pause. */
  readonly reclaims: number | undefined;
  readonly reclaimSeconds: number | undefined;
}

export interface ChangeSample {
  readonly change: EndpointChange;
  /** From the load generator offering the changed snapshot until each affected agent applied it, ms. */
  readonly appliedMs: ReadonlyMap<string, number>;
  /** Bytes each agent received while the change was in flight (agents not listed received nothing). */
  readonly bytes: ReadonlyMap<string, { readonly wireBytes: number; readonly kinds: readonly string[] }>;
  /**
   * Where the changed cluster's time went, ms, from the load generator's events: offered → its relay
   * client pushed the input (delta built and sent) → the server acked it (intake) → the first output
   * frame after the ack arrived (translation, output delta, send) → applied (patch, hash check, apply).
   */
  readonly stages: ChangeStages;
}

/** Milliseconds since the change was offered at which each event came; undefined where it did not. */
export interface ChangeStages {
  readonly pushedAt: number | undefined;
  readonly ackedAt: number | undefined;
  /** The first output frame the changed cluster received after the ack. */
  readonly receivedAt: number | undefined;
  readonly appliedAt: number | undefined;
  /** Output frames the changed cluster received between the offer and the ack (none expected). */
  readonly receivedBeforeAck: number;
}

export interface Storm {
  readonly resyncFromRestartMs: number;
  readonly resyncFromHealthyMs: number;
  /** From the restart: /healthz answering, and the first and the median agent resynced (where the time goes). */
  readonly healthyFromRestartMs: number;
  readonly firstResyncFromRestartMs: number;
  readonly medianResyncFromRestartMs: number;
  /** Agents whose output did not change (all of them: no input changed). */
  readonly agents: number;
  readonly bytesResent: number;
  readonly reApplies: number;
  /**
   * The restarted server's first translation: a fresh engine over every input it loaded from
   * Redis, i.e. a cold full translation (meshrelay_translation_duration_seconds, wall time with
   * the loop's yields). Undefined if more than one run had ended when it was read.
   */
  readonly coldTranslationMs: number | undefined;
  /**
   * The restarted server's longest event-loop delay from its start until every agent had resynced
   * (prom-client's nodejs_eventloop_lag_max_seconds, read first after the resync). A loop held
   * that long completes no TLS handshake and closes no abandoned connection meanwhile.
   */
  readonly loopDelayMaxMs: number | undefined;
  /**
   * What the restarted server spent validating the inputs it loaded from Redis, before its first
   * run (meshrelay_stored_input_validation_duration_seconds: its intake of stored inputs).
   */
  readonly storedValidationMs: number | undefined;
}

export interface LiveResults {
  processes?: number;
  cold?: ColdStart;
  memory?: Memory;
  /** The same, once the server has been idle SETTLE_IDLE_MS after going quiet (see there). */
  settledMemory?: Memory;
  /** After convergence, how long the server took to go quiet (see serverQuiet). */
  quiet?: Quiet;
  changes: ChangeSample[];
  storm?: Storm;
  /** The clusters that ran real agents. */
  realAgents?: readonly string[];
  staggered?: StaggeredStart;
  kindChanges: KindChangeSample[];
  rss?: RssHighWater;
}

function procMemory(pid: number | undefined): Pick<Memory, 'rssHighWaterBytes'> {
  if (pid === undefined) return { rssHighWaterBytes: undefined };
  const { hwmKiB } = procStatus(pid);
  return { rssHighWaterBytes: Number.isNaN(hwmKiB) ? undefined : hwmKiB * 1024 };
}

export interface Quiet {
  /** Milliseconds from convergence until the server's CPU use stayed low. */
  readonly afterMs: number;
  /** The server's CPU use, as a share of one core, in the window that ended the wait. */
  readonly share: number;
  /** False when it did not go quiet within QUIET_LIMIT_MS (the changes then start all the same). */
  readonly reached: boolean;
}

/**
 * The server counts as quiet after QUIET_WINDOWS windows of QUIET_WINDOW_MS in a row each under QUIET_SHARE of a core.
 */
const QUIET_SHARE = 0.1;
const QUIET_WINDOW_MS = 1000;
const QUIET_WINDOWS = 2;
const QUIET_LIMIT_MS = 120_000;

/**
 * Waits until the server has finished the work a cold start leaves behind once every agent has its
 * output (the kept contributions and the outputs written to the shared state): its CPU use stays under
 * QUIET_SHARE of a core for QUIET_WINDOWS windows in a row. The changes are then measured against a
 * server in its steady state, not against the tail of the cold start. Gives up after QUIET_LIMIT_MS.
 */
export async function serverQuiet(pid: number, signal: AbortSignal): Promise<Quiet> {
  const startedAt = Date.now();
  let calm = 0;
  let share = 1;
  let before = cpuSeconds(pid);
  while (calm < QUIET_WINDOWS && Date.now() - startedAt < QUIET_LIMIT_MS) {
    await sleep(QUIET_WINDOW_MS, undefined, { signal });
    const now = cpuSeconds(pid);
    share = (now - before) / (QUIET_WINDOW_MS / 1000);
    before = now;
    calm = share < QUIET_SHARE ? calm + 1 : 0;
  }
  return { afterMs: Date.now() - startedAt, share, reached: calm >= QUIET_WINDOWS };
}

async function serverMemory(metricsPort: number, pid: number | undefined): Promise<Memory> {
  const series = await scrapeMetrics(metricsPort);
  return {
    rssBytes: metricEndingWith(series, 'process_resident_memory_bytes'),
    heapUsedBytes: metricEndingWith(series, 'nodejs_heap_size_used_bytes'),
    reclaims: metricEndingWith(series, 'meshrelay_memory_reclaim_duration_seconds_count'),
    reclaimSeconds: metricEndingWith(series, 'meshrelay_memory_reclaim_duration_seconds_sum'),
    ...procMemory(pid),
  };
}

/** Starts every relay client; resolves when every agent applied an output built from all initial inputs. */
async function coldStart(fleet: Fleet, workload: Workload, signal: AbortSignal): Promise<ColdStart> {
  const expected = provenanceDigest(
    [...workload.inputs.values()].map((s) => ({ cluster: s.cluster, inputHash: s.hash })),
  );
  const names = workload.clusters.map((c) => c.name);
  const startedAt = Date.now();
  fleet.startClients();
  const complete = (name: string) => fleet.of('applied').find((e) => e.cluster === name && e.provenance === expected);
  const progress = (): string => {
    const agentsWith = (t: 'acked' | 'applied') =>
      new Set(
        fleet
          .of(t)
          .filter((e) => e.t !== 'acked' || e.accepted)
          .map((e) => e.cluster),
      ).size;
    const completeCount = names.filter((n) => complete(n) !== undefined).length;
    return `every agent applied an output built from all ${names.length} inputs (by then: ${agentsWith('acked')} agents had an input accepted, ${agentsWith('applied')} had applied an output, ${completeCount} a complete one)`;
  };
  await fleet.waitUntil(() => names.every((n) => complete(n) !== undefined), progress, signal);
  const first = (name: string) => fleet.of('applied').find((e) => e.cluster === name)?.at ?? Number.NaN;
  return {
    firstOutputMs: Math.max(...names.map(first)) - startedAt,
    completeOutputMs: Math.max(...names.map((n) => complete(n)?.at ?? Number.NaN)) - startedAt,
  };
}

/** One change: push it, wait until its cluster applied the new address, let late sends arrive, attribute what came. */
async function oneChange(
  fleet: Fleet,
  change: EndpointChange,
  settleMs: number,
  signal: AbortSignal,
): Promise<ChangeSample> {
  const mark = Date.now();
  fleet.change(change);
  await fleet.waitUntil(
    () => fleet.of('offered', mark).some((e) => e.cluster === change.cluster),
    `${change.cluster} offered change ${change.index}`,
    signal,
  );
  const offeredAt = (fleet.of('offered', mark).find((e) => e.cluster === change.cluster) as { at: number }).at;
  const carries = () =>
    fleet.of('applied', offeredAt).find((e) => e.cluster === change.cluster && e.found.includes(change.address));
  await fleet.waitUntil(
    () => carries() !== undefined,
    `${change.cluster} applied change ${change.index} (${change.address})`,
    signal,
  );
  await sleep(settleMs, undefined, { signal });
  const bytes = new Map<string, { wireBytes: number; kinds: string[] }>();
  for (const r of fleet.of('received', offeredAt)) {
    const entry = bytes.get(r.cluster) ?? { wireBytes: 0, kinds: [] };
    entry.wireBytes += r.wireBytes;
    entry.kinds.push(r.kind);
    bytes.set(r.cluster, entry);
  }
  const appliedMs = new Map<string, number>();
  for (const cluster of bytes.keys()) {
    const applied =
      cluster === change.cluster ? carries() : fleet.of('applied', offeredAt).find((e) => e.cluster === cluster);
    if (applied) appliedMs.set(cluster, applied.at - offeredAt);
  }
  return { change, appliedMs, bytes, stages: stagesOf(fleet, change, offeredAt, carries()?.at) };
}

function stagesOf(
  fleet: Fleet,
  change: EndpointChange,
  offeredAt: number,
  appliedAt: number | undefined,
): ChangeStages {
  const mine = <T extends { cluster: string; at: number }>(list: readonly T[]) =>
    list.filter((e) => e.cluster === change.cluster);
  const since = (at: number | undefined) => (at === undefined ? undefined : at - offeredAt);
  const ackedAt = mine(fleet.of('acked', offeredAt))[0]?.at;
  const received = mine(fleet.of('received', offeredAt));
  return {
    pushedAt: since(mine(fleet.of('pushed', offeredAt))[0]?.at),
    ackedAt: since(ackedAt),
    receivedAt: since(received.find((e) => ackedAt !== undefined && e.at >= ackedAt)?.at),
    appliedAt: since(appliedAt),
    receivedBeforeAck: received.filter((e) => ackedAt === undefined || e.at < ackedAt).length,
  };
}

interface Plane {
  readonly redis: RedisServerHandle;
  readonly stateDir: string;
  readonly args: string[];
  readonly relayPort: number;
  readonly httpPort: number;
  readonly metricsPort: number;
  server: ServerProcess;
}

/**
 * kill -9 the server, start it again with the same state and Redis, and wait until every agent pushed and pulled again.
 */
async function reconnectStorm(
  plane: Plane,
  fleet: Fleet,
  names: readonly string[],
  settleMs: number,
  signal: AbortSignal,
): Promise<Storm> {
  const killedAt = Date.now();
  await stopChild(plane.server.proc, 'SIGKILL');
  const restartedAt = Date.now();
  plane.server = startServerProcess(plane.args);
  fleet.server = plane.server;
  const upAt = await waitHealthy(plane.server, plane.httpPort, 120_000);
  const resynced = (n: string) =>
    fleet.of('acked', restartedAt).some((e) => e.cluster === n && e.accepted) &&
    fleet.of('pull-open', restartedAt).some((e) => e.cluster === n);
  await fleet.waitUntil(
    () => names.every(resynced),
    'every agent pushed (acked) and opened its pull stream on the restarted server',
    signal,
  );
  // An agent's resync ends with the last of its acks and pull-stream openings on the restarted server.
  const lastOf = (n: string) =>
    Math.max(
      ...fleet
        .of('acked', restartedAt)
        .filter((e) => e.cluster === n)
        .map((e) => e.at),
      ...fleet
        .of('pull-open', restartedAt)
        .filter((e) => e.cluster === n)
        .map((e) => e.at),
    );
  const resyncAt = names.map(lastOf).sort((a, b) => a - b);
  const lastAt = resyncAt[resyncAt.length - 1] as number;
  process.stderr.write(
    `storm: /healthz after ${upAt - restartedAt} ms; agents resynced after (ms from restart) ${resyncAt.map((at) => at - restartedAt).join(' ')}\n`,
  );
  // Whatever the restarted server would re-send comes after its first translation.
  let coldTranslationMs: number | undefined;
  let storedValidationMs: number | undefined;
  let series = await scrapeMetrics(plane.metricsPort);
  // The server's lag histogram starts over at each scrape: only this first one covers the resync.
  const lagSeconds = metricEndingWith(series, 'nodejs_eventloop_lag_max_seconds');
  for (; ; series = await scrapeMetrics(plane.metricsPort)) {
    const count = metricEndingWith(series, 'translation_duration_seconds_count') ?? 0;
    if (count >= 1) {
      const sum = metricEndingWith(series, 'translation_duration_seconds_sum');
      coldTranslationMs = count === 1 && sum !== undefined ? sum * 1000 : undefined;
      const validated = metricEndingWith(series, 'stored_input_validation_duration_seconds_sum');
      storedValidationMs = validated === undefined ? undefined : validated * 1000;
      break;
    }
    await sleep(50, undefined, { signal });
  }
  await sleep(Math.max(settleMs, 1000), undefined, { signal });
  return {
    resyncFromRestartMs: lastAt - restartedAt,
    resyncFromHealthyMs: lastAt - upAt,
    healthyFromRestartMs: upAt - restartedAt,
    firstResyncFromRestartMs: (resyncAt[0] as number) - restartedAt,
    medianResyncFromRestartMs: (resyncAt[Math.floor(resyncAt.length / 2)] as number) - restartedAt,
    agents: names.length,
    bytesResent: fleet.of('received', killedAt).reduce((n, e) => n + e.wireBytes, 0),
    reApplies: fleet.of('applied', killedAt).length,
    coldTranslationMs,
    storedValidationMs,
    loopDelayMaxMs: lagSeconds === undefined ? undefined : lagSeconds * 1000,
  };
}

async function startPlane(options: LiveOptions): Promise<Plane> {
  const redis = await startRedisServer();
  const stateDir = await mkdtemp(join(tmpdir(), 'meshrelay-tier-server-'));
  const ports = await freeServerPorts();
  // MESHRELAY_BENCH_SERVER_LOG_LEVEL=info shows the server's own account of a run (on stderr with its warnings).
  const logLevel = process.env['MESHRELAY_BENCH_SERVER_LOG_LEVEL'] ?? 'warn';
  const args = serverArgs(ports, stateDir, ADMIN_TOKEN, [
    '--redis-url',
    redis.url,
    '--log-level',
    logLevel,
    ...options.serverFlags,
  ]);
  const server = startServerProcess(args);
  const plane = {
    redis,
    stateDir,
    args,
    relayPort: ports.relayPort,
    httpPort: ports.httpPort,
    metricsPort: ports.metricsPort,
    server,
  };
  await waitHealthy(server, ports.httpPort, 60_000).catch(async (err: unknown) => {
    await stopPlane(plane);
    throw err;
  });
  return plane;
}

async function stopPlane(plane: Plane): Promise<void> {
  await stopChild(plane.server.proc);
  await plane.redis.stop();
  await rm(plane.stateDir, { recursive: true, force: true });
}

/** Runs the live phases on `runner`; what was measured before a failure or timeout stays in the result. */
export async function runLive(runner: PhaseRunner, options: LiveOptions): Promise<LiveResults> {
  const results: LiveResults = { changes: [], kindChanges: [], realAgents: options.realAgents };
  const { workload } = options;
  const names = workload.clusters.map((c) => c.name);
  const plane = await runner.run('start redis-server and meshrelay-server', () => startPlane(options));
  if (!plane) return results;
  const sampler = new RssSampler(
    () => plane.server.proc.pid,
    () => runner.current,
  );
  const realRoot = await mkdtemp(join(tmpdir(), 'meshrelay-tier-agents-'));
  let fleet: Fleet | undefined;
  let real: RealAgents | undefined;
  try {
    fleet = await runner.run(
      "register clusters, start load generators, write the real agents' manifests",
      async (signal) => {
        const { clusters, caPem } = await registerClusters(plane.httpPort, ADMIN_TOKEN, names);
        const address = `localhost:${plane.relayPort}`;
        const started = await Fleet.start({
          shape: workload.shape,
          address,
          caPem,
          clusters,
          processes: options.processes,
          signal,
          skip: new Set(options.realAgents),
        });
        const inputs = options.realAgents.map((c) => workload.inputs.get(c)).filter((i) => i !== undefined);
        if (inputs.length > 0)
          real = await RealAgents.prepare({ root: realRoot, inputs, clusters, caPem, address, events: started.events });
        return started;
      },
    );
    if (!fleet) return results;
    const agents = fleet;
    agents.server = plane.server;
    agents.alsoWatch = () => real?.ended;
    results.processes = agents.processes;
    await coldStartPhase(runner, agents, real, options, results);
    results.memory = await runner.run('server memory after convergence', () =>
      serverMemory(plane.metricsPort, plane.server.proc.pid),
    );
    const pid = plane.server.proc.pid;
    if (pid !== undefined)
      results.quiet = await runner.run('server goes quiet after convergence', (signal) => serverQuiet(pid, signal));
    // The settled memory is read after options.settleIdleMs (30 s by default, --settle-idle-seconds).
    // Once idle (5 s by default, --memory-reclaim-idle) after the cold start grew its heap, the
    // server runs one full collection that returns the cold start's garbage; before it did, V8 alone
    // gave it back in some idle runs and kept it for 45 s in others. The reading says how many
    // reclaims had run.
    results.settledMemory = await runner.run(
      `server memory once settled (${options.settleIdleMs / 1000} s idle)`,
      async (signal) => {
        await sleep(options.settleIdleMs, undefined, { signal });
        return serverMemory(plane.metricsPort, plane.server.proc.pid);
      },
    );
    const context = {
      fleet: agents,
      real,
      workload,
      serverPid: () => plane.server.proc.pid,
      metricsPort: plane.metricsPort,
      targets: options.kindTargets,
    };
    await kindChangePhases(runner, context, options.kindChanges, results.kindChanges);
    await runner.run(`${options.changeIndexes.length} one-endpoint changes`, async (signal) => {
      for (const i of options.changeIndexes)
        results.changes.push(await oneChange(agents, endpointChange(workload.shape, i), options.settleMs, signal));
    });
    // The storm needs a converged plane, not every change: it still runs after the change phase stopped.
    // Real agents log no pull-stream opening: the resync is timed on the load generators' clusters.
    const relayClients = names.filter((n) => !options.realAgents.includes(n));
    results.storm = await runner.run(
      'reconnect storm (kill -9, restart, Redis kept)',
      (signal) => reconnectStorm(plane, agents, relayClients, options.settleMs, signal),
      { always: results.cold !== undefined },
    );
  } finally {
    results.rss = sampler.stop();
    await real?.stop();
    await fleet?.stop();
    await stopPlane(plane);
    await rm(realRoot, { recursive: true, force: true });
  }
  return results;
}

/** All at once (every relay client and real agent started together) or staggered over options.staggerMs. */
async function coldStartPhase(
  runner: PhaseRunner,
  fleet: Fleet,
  real: RealAgents | undefined,
  options: LiveOptions,
  results: LiveResults,
): Promise<void> {
  if (options.staggerMs > 0) {
    results.staggered = await runner.run(`cold start, inputs arriving over ${options.staggerMs / 1000} s`, (signal) =>
      staggeredStart(fleet, real, options.workload, options.staggerMs, signal),
    );
    if (results.staggered)
      results.cold = {
        firstOutputMs: results.staggered.firstOutputMs,
        completeOutputMs: results.staggered.completeOutputMs,
      };
    return;
  }
  results.cold = await runner.run('cold start', (signal) => {
    for (const c of real?.clusters ?? []) real?.start(c);
    return coldStart(fleet, options.workload, signal);
  });
}
