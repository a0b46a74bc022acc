/**
 * The tier bench's measurements of the whole path (issue 26): a staggered cold start (inputs
 * arriving evenly over a window) and the two change kinds (change-kinds.ts) made through real
 * agents' discovery (a manifest file edit) or a load generator's offer, timed until every agent
 * that must apply the change applied it, with the server's and the real agents' CPU-seconds and
 * the bytes each agent was sent per change.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds } from '../proc-stats.ts';
import type { Workload } from '../workload.ts';
import { kindChange, type ChangeKind, type KindChange } from './change-kinds.ts';
import type { Fleet } from './fleet.ts';
import { provenanceDigest } from './load-generator.ts';
import type { PhaseRunner } from './phases.ts';
import { scrapeMetrics } from './processes.ts';
import type { RealAgents } from './real-agents.ts';
import { profiled } from './server-profile.ts';

export interface StaggeredStart {
  readonly windowMs: number;
  /**
   * From the start of the window: the last cluster started (its relay client offered its input, or its agent process
   * began discovery).
   */
  readonly lastArrivalMs: number;
  /**
   * From the start of the window: the server accepted the last cluster's first input (its ack; intake can lag far
   * behind the arrivals).
   */
  readonly lastAcceptedMs: number;
  /** From the last arrival until every agent applied an output built from every initial input. */
  readonly completeAfterLastArrivalMs: number;
  /** The same for the real agents only. */
  readonly realCompleteAfterLastArrivalMs: number | undefined;
  /** From the start of the window until every agent applied its first / its complete output. */
  readonly firstOutputMs: number;
  readonly completeOutputMs: number;
}

/**
 * Starts clusters one after another, evenly over `windowMs` (real agents as processes, the rest as relay clients);
 * resolves once every agent holds its complete output.
 */
export async function staggeredStart(
  fleet: Fleet,
  real: RealAgents | undefined,
  workload: Workload,
  windowMs: number,
  signal: AbortSignal,
): Promise<StaggeredStart> {
  const expected = provenanceDigest(
    [...workload.inputs.values()].map((s) => ({ cluster: s.cluster, inputHash: s.hash })),
  );
  const names = workload.clusters.map((c) => c.name);
  const startedAt = Date.now();
  for (const [k, name] of names.entries()) {
    const dueAt = startedAt + (names.length > 1 ? (k * windowMs) / (names.length - 1) : 0);
    if (dueAt > Date.now()) await sleep(dueAt - Date.now(), undefined, { signal });
    if (real?.has(name) === true) real.start(name);
    else fleet.startClients([name]);
  }
  const lastArrival = Date.now();
  const arrived = (n: string) => fleet.of('acked').find((e) => e.cluster === n && e.accepted)?.at;
  const complete = (n: string) => fleet.of('applied').find((e) => e.cluster === n && e.provenance === expected)?.at;
  const progress = () =>
    `every agent applied an output built from all ${names.length} inputs (by then ${names.filter((n) => arrived(n) !== undefined).length} inputs accepted, ${names.filter((n) => complete(n) !== undefined).length} agents complete)`;
  await fleet.waitUntil(
    () => names.every((n) => arrived(n) !== undefined && complete(n) !== undefined),
    progress,
    signal,
  );
  const lastAccepted = Math.max(...names.map((n) => arrived(n) as number));
  const first = (n: string) => fleet.of('applied').find((e) => e.cluster === n)?.at ?? Number.NaN;
  const realNames = real?.clusters ?? [];
  return {
    windowMs,
    lastArrivalMs: lastArrival - startedAt,
    lastAcceptedMs: lastAccepted - startedAt,
    completeAfterLastArrivalMs: Math.max(...names.map((n) => complete(n) as number)) - lastArrival,
    realCompleteAfterLastArrivalMs:
      realNames.length > 0 ? Math.max(...realNames.map((n) => complete(n) as number)) - lastArrival : undefined,
    firstOutputMs: Math.max(...names.map(first)) - startedAt,
    completeOutputMs: Math.max(...names.map((n) => complete(n) as number)) - startedAt,
  };
}

export interface KindChangeSample {
  readonly change: KindChange;
  /** Whether the changed cluster runs a real agent (the change was a manifest edit). */
  readonly viaRealAgent: boolean;
  /** Clusters whose output had to change (the owner for an address change, every cluster for a readiness flip). */
  readonly expected: readonly string[];
  /** From the edit or offer until each agent applied its changed output, ms. */
  readonly appliedMs: ReadonlyMap<string, number>;
  /** Server CPU-seconds from before the change until the plane was quiet again. */
  readonly serverCpuSeconds: number;
  /** Each real agent's CPU-seconds over the same span. */
  readonly agentCpuSeconds: ReadonlyMap<string, number>;
  /** Bytes the server sent each agent over the same span (relay_snapshot_bytes_total, direction pull). */
  readonly bytes: ReadonlyMap<string, number>;
  /** Milliseconds the wait for quiet took after the last apply (the CPU span's tail). */
  readonly quietAfterMs: number;
}

/**
 * Quiet = every watched process under QUIET_SHARE of a core for QUIET_WINDOWS windows of QUIET_WINDOW_MS in a row (at
 * most QUIET_LIMIT_MS).
 */
const QUIET_SHARE = 0.1;
const QUIET_WINDOW_MS = 500;
const QUIET_WINDOWS = 3;
const QUIET_LIMIT_MS = 30_000;

async function quiet(pids: readonly number[], signal: AbortSignal): Promise<void> {
  const startedAt = Date.now();
  let calm = 0;
  let before = pids.map(cpuSeconds);
  while (calm < QUIET_WINDOWS && Date.now() - startedAt < QUIET_LIMIT_MS) {
    await sleep(QUIET_WINDOW_MS, undefined, { signal });
    const now = pids.map(cpuSeconds);
    const busiest = Math.max(...now.map((v, i) => v - (before[i] as number)));
    before = now;
    calm = busiest / (QUIET_WINDOW_MS / 1000) < QUIET_SHARE ? calm + 1 : 0;
  }
}

/** Pull bytes sent so far, by cluster, from the server's /metrics. */
async function pullBytes(metricsPort: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [series, value] of await scrapeMetrics(metricsPort)) {
    if (!series.startsWith('relay_snapshot_bytes_total{') || !series.includes('direction="pull"')) continue;
    const cluster = /cluster="([^"]+)"/.exec(series)?.[1];
    if (cluster !== undefined) out.set(cluster, (out.get(cluster) ?? 0) + value);
  }
  return out;
}

export interface KindChangeContext {
  readonly fleet: Fleet;
  readonly real: RealAgents | undefined;
  readonly workload: Workload;
  readonly serverPid: () => number | undefined;
  readonly metricsPort: number;
  readonly targets: readonly number[];
}

/** The last output hash each cluster applied. */
function heldHashes(fleet: Fleet): Map<string, string> {
  const held = new Map<string, string>();
  for (const e of fleet.of('applied')) held.set(e.cluster, e.hash);
  return held;
}

/** Makes one change and measures it (see KindChangeSample); the plane is quiet before and after. */
export async function oneKindChange(
  ctx: KindChangeContext,
  kind: ChangeKind,
  index: number,
  signal: AbortSignal,
): Promise<KindChangeSample> {
  const { fleet, real, workload } = ctx;
  const change = kindChange(workload.shape, kind, index, ctx.targets);
  const serverPid = ctx.serverPid() as number;
  const watched = () => [serverPid, ...[...(real?.clusters ?? [])].flatMap((c) => real?.pid(c) ?? [])];
  await quiet(watched(), signal);
  const held = heldHashes(fleet);
  const bytesBefore = await pullBytes(ctx.metricsPort);
  const serverBefore = cpuSeconds(serverPid);
  const agentsBefore = real?.cpu() ?? new Map<string, number>();
  const viaRealAgent = real?.has(change.cluster) === true;
  let madeAt: number;
  if (viaRealAgent) {
    madeAt = await (real as RealAgents).edit(change);
  } else {
    const mark = Date.now();
    fleet.kindChange(change);
    const offered = () => fleet.of('offered', mark).find((e) => e.cluster === change.cluster);
    await fleet.waitUntil(() => offered() !== undefined, `${change.cluster} offered ${kind} change ${index}`, signal);
    madeAt = (offered() as { at: number }).at;
  }
  const expected = kind === 'address' ? [change.cluster] : workload.clusters.map((c) => c.name);
  const appliedAt = (cluster: string) =>
    fleet.of('applied', madeAt).find((e) => e.cluster === cluster && e.hash !== held.get(cluster))?.at;
  const pending = () => expected.filter((c) => appliedAt(c) === undefined);
  await fleet.waitUntil(
    () => pending().length === 0,
    () =>
      `every agent applied ${kind} change ${index} of ${change.cluster}/${change.service} (still waiting for ${pending().slice(0, 5).join(', ')}${pending().length > 5 ? ', …' : ''})`,
    signal,
  );
  const lastApplied = Date.now();
  await quiet(watched(), signal);
  const quietAfterMs = Date.now() - lastApplied;
  const serverCpuSeconds = cpuSeconds(serverPid) - serverBefore;
  const agentCpuSeconds = new Map(
    [...(real?.cpu() ?? new Map<string, number>())].map(([c, v]) => [c, v - (agentsBefore.get(c) ?? v)]),
  );
  const bytesAfter = await pullBytes(ctx.metricsPort);
  const bytes = new Map(
    [...bytesAfter].map(([c, v]) => [c, v - (bytesBefore.get(c) ?? 0)] as const).filter(([, v]) => v > 0),
  );
  const appliedMs = new Map(expected.map((c) => [c, (appliedAt(c) as number) - madeAt]));
  return { change, viaRealAgent, expected, appliedMs, serverCpuSeconds, agentCpuSeconds, bytes, quietAfterMs };
}

/**
 * The address changes, then the readiness changes (under the server's profiler when asked, see server-profile.ts), each
 * kind a phase.
 */
export async function kindChangePhases(
  runner: PhaseRunner,
  context: KindChangeContext,
  changes: number,
  into: KindChangeSample[],
): Promise<void> {
  for (const kind of ['address', 'readiness'] as const) {
    // Readiness flips go in unready/ready pairs (an even count), so the endpoints end ready for the changes after them.
    const count = kind === 'readiness' ? changes + (changes % 2) : changes;
    await runner.run(`${count} ${kind} changes (whole path)`, async (signal) => {
      const all = async () => {
        for (let i = 0; i < count; i++) into.push(await oneKindChange(context, kind, i, signal));
      };
      await (kind === 'readiness' ? profiled(all) : all());
    });
  }
}
