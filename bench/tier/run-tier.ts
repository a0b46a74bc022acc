/**
 * `npm run bench -- --tier S|M|L [options]`: the tier bench with real processes. Phases, each
 * under a time limit: workload generation; redis-server + meshrelay-server (default flags);
 * cluster registration over the HTTP API; load generators (RelayClients over mTLS) and, for a
 * sample of clusters (--real-agents N), real `meshrelay-agent` processes (file discovery, file
 * apply); a cold start with the inputs arriving over --stagger-seconds; server memory; address and
 * readiness changes on the whole path (--kind-changes N of each, whole-path.ts); one-endpoint
 * changes; a kill -9 reconnect storm (server RSS is sampled every 500 ms throughout); then, in this process, the
 * naive full recompute + full resend baseline of the same changes and the encoding floors of the
 * same outputs; finally one real agent process's footprint. Writes the tier's section of
 * bench/RESULTS.md with whatever was measured and, if a phase failed or timed out, where and why.
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MeshrelayError } from '@meshrelay/api';
import { measureAgentFootprint, type AgentFootprint } from '../agent-footprint.ts';
import { describeMachine } from '../report.ts';
import { writeResultsSection } from '../results-file.ts';
import { fullApplyCpuMs } from '../agent-apply.ts';
import { TIERS, clusterName, generateWorkload, type Workload, type WorkloadShape } from '../workload.ts';
import { changeTargets, realAgentIndexes } from './change-kinds.ts';
import { loadGeneratorChangeIndexes } from './endpoint-change.ts';
import { NaivePlane, largestOutput, measureFloors, type Baseline } from './baseline.ts';
import { assertWorkloadFits } from './memory-budget.ts';
import { runLive, type LiveResults } from './live-run.ts';
import { PhaseRunner } from './phases.ts';
import { renderTierSection } from './tier-report.ts';

const DEFAULT_RESULTS = fileURLToPath(new URL('../RESULTS.md', import.meta.url));
/** Per tier: load-generator processes, phase time limit (s). */
/** Per tier: load-generator processes, phase time limit (s), real agents, cold-start arrival window (s). */
const TIER_DEFAULTS: Readonly<
  Record<string, { processes: number; phaseSeconds: number; realAgents: number; staggerSeconds: number }>
> = {
  S: { processes: 2, phaseSeconds: 120, realAgents: 3, staggerSeconds: 10 },
  M: { processes: 5, phaseSeconds: 1200, realAgents: 3, staggerSeconds: 120 },
  L: { processes: 8, phaseSeconds: 2400, realAgents: 3, staggerSeconds: 120 },
};
/** Connections the server admits from one address by default; the bench's agents all come from loopback. */
const DEFAULT_MAX_CONNECTIONS_PER_PEER = 64;
/** Registrations in flight plus recent failures one address may have by default (--registration-max-failures). */
const DEFAULT_REGISTRATION_MAX_FAILURES = 5;

/**
 * Connections one agent may hold at once while it reconnects: its relay connection, the one it is
 * opening, and its reachability probe while it waits out a backoff.
 */
const CONNECTIONS_PER_AGENT = 3;

/**
 * The per-address limits assume one agent per address; every agent of the bench dials from
 * 127.0.0.1, so where the tier has more agents than a limit allows, the limit is raised (and the
 * report names it). Without this, registrations of the cold start queue five at a time, and in
 * the reconnect storm the connection limit would reset agents' connections before their handshake
 * (an agent holds one connection, and a second for a moment while it probes a server it lost).
 */
function loopbackPeerFlags(clusters: number): string[] {
  const flags: string[] = [];
  if (clusters > DEFAULT_REGISTRATION_MAX_FAILURES)
    flags.push('--registration-max-failures', String(clusters + DEFAULT_REGISTRATION_MAX_FAILURES));
  const connections = clusters * CONNECTIONS_PER_AGENT;
  if (connections > DEFAULT_MAX_CONNECTIONS_PER_PEER)
    flags.push('--max-connections-per-peer', String(connections + 16));
  return flags;
}

export interface TierOptions {
  readonly tier: string;
  readonly custom: boolean;
  readonly shape: WorkloadShape;
  readonly changes: number;
  readonly baselineChanges: number;
  readonly processes: number;
  readonly phaseTimeoutMs: number;
  readonly settleMs: number;
  readonly footprintIdleSeconds: number;
  readonly footprintSettleMs: number;
  readonly resultsPath: string;
  /** Section of the results file to write (default tier-<T>, or tier-custom for a custom shape). */
  readonly resultsSection: string | undefined;
  readonly serverFlags: readonly string[];
  /** Clusters running a real `meshrelay-agent` (at most all but one: the one-endpoint changes need a relay client). */
  readonly realAgents: readonly string[];
  readonly realAgentIndexes: readonly number[];
  /** Changes of each kind (address, readiness) on the whole path. */
  readonly kindChanges: number;
  readonly staggerSeconds: number;
  /** How long the converged server idles before its settled memory is read (see live-run.ts). */
  readonly settleIdleSeconds: number;
}

function wholeNumber(flag: string, raw: string | undefined, fallback: number, min = 0): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `--${flag}: "${raw}" is not a whole number ≥ ${min}`);
  return n;
}

/**
 * A results section id (letters, digits, dashes), e.g. tier-M-staggered for a second run of a tier with other flags.
 */
function sectionId(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^[\w-]+$/.test(raw))
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `--results-section: "${raw}" is not made of letters, digits and dashes`,
    );
  return raw;
}

/** Parses the tier bench's flags; throws MESHRELAY_ERR_INVALID_ARGUMENT naming the bad one. */
export function parseTierOptions(argv: readonly string[]): TierOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      tier: { type: 'string' },
      clusters: { type: 'string' },
      services: { type: 'string' },
      endpoints: { type: 'string' },
      nodes: { type: 'string' },
      changes: { type: 'string' },
      'baseline-changes': { type: 'string' },
      processes: { type: 'string' },
      'phase-timeout': { type: 'string' },
      'settle-ms': { type: 'string' },
      'results-section': { type: 'string' },
      'real-agents': { type: 'string' },
      'kind-changes': { type: 'string' },
      'stagger-seconds': { type: 'string' },
      'settle-idle-seconds': { type: 'string' },
      'footprint-idle-seconds': { type: 'string' },
      'footprint-settle-ms': { type: 'string' },
      results: { type: 'string' },
    },
  });
  const tier = (values.tier ?? '').toUpperCase();
  const base = TIERS[tier];
  const defaults = TIER_DEFAULTS[tier];
  if (!base || !defaults)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `--tier: "${values.tier ?? ''}" is not one of ${Object.keys(TIERS).join(', ')}`,
    );
  const shape: WorkloadShape = {
    ...base,
    clusters: wholeNumber('clusters', values.clusters, base.clusters, 1),
    servicesPerCluster: wholeNumber('services', values.services, base.servicesPerCluster, 1),
    endpointsPerService: wholeNumber('endpoints', values.endpoints, base.endpointsPerService, 1),
    nodesPerCluster: wholeNumber('nodes', values.nodes, base.nodesPerCluster, 1),
  };
  const changes = wholeNumber('changes', values.changes, 20, 1);
  const custom = JSON.stringify(shape) !== JSON.stringify(base);
  const realIndexes = realAgentIndexes(
    shape.clusters,
    Math.min(wholeNumber('real-agents', values['real-agents'], defaults.realAgents), shape.clusters - 1),
  );
  return {
    tier,
    custom,
    shape,
    changes,
    baselineChanges: wholeNumber('baseline-changes', values['baseline-changes'], changes),
    processes: wholeNumber('processes', values.processes, defaults.processes, 1),
    phaseTimeoutMs: wholeNumber('phase-timeout', values['phase-timeout'], defaults.phaseSeconds, 1) * 1000,
    settleMs: wholeNumber('settle-ms', values['settle-ms'], 300),
    footprintIdleSeconds: wholeNumber('footprint-idle-seconds', values['footprint-idle-seconds'], 30),
    footprintSettleMs: wholeNumber('footprint-settle-ms', values['footprint-settle-ms'], 10_000),
    resultsPath: values.results ?? DEFAULT_RESULTS,
    resultsSection: sectionId(values['results-section']),
    serverFlags: loopbackPeerFlags(shape.clusters),
    realAgents: realIndexes.map(clusterName),
    realAgentIndexes: realIndexes,
    kindChanges: wholeNumber('kind-changes', values['kind-changes'], 10),
    staggerSeconds: wholeNumber('stagger-seconds', values['stagger-seconds'], defaults.staggerSeconds),
    settleIdleSeconds: wholeNumber('settle-idle-seconds', values['settle-idle-seconds'], 30),
  };
}

async function runBaseline(
  runner: PhaseRunner,
  workload: Workload,
  options: TierOptions,
  changeIndexes: readonly number[],
): Promise<Baseline> {
  const baseline: Baseline = { changes: [] };
  const plane = new NaivePlane(workload);
  await runner.run(
    'baseline: naive full recompute + full resend',
    async (signal) => {
      baseline.cold = await plane.recompute();
      baseline.largestOutput = largestOutput(plane.outputs, baseline.cold.fullBytes);
      for (const i of changeIndexes.slice(0, options.baselineChanges)) {
        if (signal.aborted) break;
        baseline.changes.push(await plane.change(i));
      }
    },
    { always: true },
  );
  if (plane.outputs.size > 0) {
    const oneCluster = workload.clusters[0]?.name as string;
    await runner.run(
      'encoding floors of the same outputs',
      () => Promise.resolve(measureFloors(plane.outputs, oneCluster, 5)).then((f) => (baseline.floors = f)),
      { always: true },
    );
    // The real agents' CPU per change is compared with a full apply of the same output (the first real agent's).
    const output = plane.outputs.get(options.realAgents[0] ?? '');
    if (output) {
      await runner.run(
        "baseline: full file apply of a real agent's output",
        async () => {
          baseline.agentFullApply = {
            cluster: output.cluster,
            resources: output.resources.length,
            bytes: output.bytes,
            cpuSeconds: (await fullApplyCpuMs(output)) / 1000,
          };
        },
        { always: true },
      );
    }
  }
  return baseline;
}

/** Runs the tier bench and writes its section; resolves to the section's Markdown. */
export async function runTier(argv: readonly string[]): Promise<string> {
  const options = parseTierOptions(argv);
  const startedAt = new Date();
  const machine = describeMachine();
  const runner = new PhaseRunner(options.phaseTimeoutMs);
  const workload = await runner.run('generate workload', async () => {
    assertWorkloadFits(options.shape);
    return generateWorkload(options.shape);
  });
  let live: LiveResults = { changes: [], kindChanges: [] };
  let baseline: Baseline = { changes: [] };
  let footprint: AgentFootprint | undefined;
  if (workload) {
    const changeIndexes = loadGeneratorChangeIndexes(options.shape, options.changes, new Set(options.realAgents));
    live = await runLive(runner, {
      workload,
      changes: options.changes,
      processes: options.processes,
      settleMs: options.settleMs,
      serverFlags: options.serverFlags,
      realAgents: options.realAgents,
      changeIndexes,
      kindChanges: options.kindChanges,
      kindTargets: changeTargets(options.shape.clusters, options.realAgentIndexes),
      staggerMs: options.staggerSeconds * 1000,
      settleIdleMs: options.settleIdleSeconds * 1000,
    });
    baseline = await runBaseline(runner, workload, options, changeIndexes);
  }
  if (options.footprintIdleSeconds > 0) {
    footprint = await runner.run(
      'agent footprint (one real agent process)',
      () => measureAgentFootprint(options.shape, options.footprintIdleSeconds, { settleMs: options.footprintSettleMs }),
      { always: true },
    );
  }
  const markdown = renderTierSection({
    options,
    argv,
    startedAt,
    machine,
    loadAverage1mAtEnd: loadavg()[0] ?? 0,
    workload,
    live,
    baseline,
    footprint,
    phases: runner.records,
    stoppedAt: runner.stoppedAt,
  });
  writeResultsSection(
    options.resultsPath,
    options.resultsSection ?? (options.custom ? 'tier-custom' : `tier-${options.tier}`),
    markdown,
  );
  console.log(markdown);
  console.error(`wrote ${options.resultsPath}`);
  return markdown;
}
