/** Renders one tier bench run as its section of bench/RESULTS.md. */
import type { AgentFootprint } from '../agent-footprint.ts';
import { quantile } from '../measure.ts';
import type { MachineInfo } from '../report.ts';
import type { Workload } from '../workload.ts';
import type { Baseline } from './baseline.ts';
import type { ChangeStages, LiveResults } from './live-run.ts';
import type { PhaseRecord } from './phases.ts';
import { wholePathLines } from './tier-report-path.ts';
import type { TierOptions } from './run-tier.ts';

export interface TierReport {
  readonly options: TierOptions;
  readonly argv: readonly string[];
  readonly startedAt: Date;
  readonly machine: MachineInfo;
  readonly loadAverage1mAtEnd: number;
  readonly workload: Workload | undefined;
  readonly live: LiveResults;
  readonly baseline: Baseline;
  readonly footprint: AgentFootprint | undefined;
  readonly phases: readonly PhaseRecord[];
  readonly stoppedAt: string | undefined;
}

/** Server and agent defaults the tier's snapshots are checked against (issue 11.6). */
const DEFAULT_LIMITS = {
  maxSnapshotBytes: 16 * 1024 * 1024,
  maxResources: 50_000,
  agentMaxSnapshotBytes: 64 * 1024 * 1024,
  maxOutputResources: 200_000,
};

const MiB = 1024 * 1024;
const ms = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '–' : `${v.toFixed(0)} ms`);
const kib = (v: number | undefined): string => (v === undefined ? '–' : `${(v / 1024).toFixed(1)} KiB`);
const mib = (v: number | undefined): string => (v === undefined ? '–' : `${(v / MiB).toFixed(1)} MiB`);
const count = (v: number): string => v.toLocaleString('en-US');
const times = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || b === 0 || Number.isNaN(a) || Number.isNaN(b) ? '–' : `${(a / b).toFixed(2)}×`;

/** "per service x KiB, per endpoint y B", or "–" when not measured. */
function perUnit(bytes: number | undefined, services: number, endpoints: number): string {
  return bytes === undefined
    ? '–'
    : `per service ${kib(bytes / services)}, per endpoint ${(bytes / endpoints).toFixed(0)} B`;
}

interface Spread {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly n: number;
}

function spread(values: readonly number[]): Spread | undefined {
  if (values.length === 0) return undefined;
  return { p50: quantile(values, 0.5), p99: quantile(values, 0.99), max: Math.max(...values), n: values.length };
}

const spreadText = (s: Spread | undefined, unit: (v: number) => string): string =>
  s ? `p50 ${unit(s.p50)}, p99 ${unit(s.p99)}, max ${unit(s.max)} (n = ${s.n})` : '–';

function header(r: TierReport): string[] {
  const m = r.machine;
  const name = r.options.custom ? `tier ${r.options.tier} shape, custom` : `tier ${r.options.tier}`;
  return [
    `# ${name}: real processes (\`npm run bench -- ${r.argv.join(' ')}\`)`,
    '',
    `Run on ${r.startedAt.toISOString()}: ${m.cpuModel} × ${m.cores} cores, ${(m.totalMemoryBytes / 1024 ** 3).toFixed(1)} GiB RAM, Node ${m.node}; ` +
      `1-minute load average ${m.loadAverage1m.toFixed(2)} at start, ${r.loadAverage1mAtEnd.toFixed(2)} at end (the machine is shared: absolute times move with load, ratios less).`,
    '',
    r.stoppedAt === undefined
      ? '**Every phase finished.**'
      : `**The run stopped at phase ${r.stoppedAt}.** Figures below are what was measured before that; later phases show "–".`,
    '',
  ];
}

function workloadLines(r: TierReport): string[] {
  const s = r.options.shape;
  const w = r.workload;
  if (!w)
    return [
      `Workload: ${s.clusters} clusters × ${s.servicesPerCluster} services × ${s.endpointsPerService} endpoints (not generated).`,
      '',
    ];
  const largest = [...w.inputs.values()].reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const out = r.baseline.largestOutput;
  const fits = (v: number, limit: number) =>
    v <= limit ? `fits (${((100 * v) / limit).toFixed(0)} % of it)` : '**does not fit**';
  return [
    '## Workload and the default limits',
    '',
    `${s.clusters} clusters × ${s.servicesPerCluster} services × ${s.endpointsPerService} endpoints, ${s.nodesPerCluster} Nodes per cluster, every ${s.exportEvery}th service exported (${w.counts.virtualDestinations} VirtualDestinations): ${count(w.counts.inputResources)} input resources, ${mib(w.counts.inputBytes)} canonical input over all clusters; input digest \`${w.counts.inputDigest.slice(0, 16)}…\`.`,
    '',
    '| snapshot | resources | canonical bytes | default limit | |',
    '|---|---:|---:|---|---|',
    `| largest input (${largest.cluster}) | ${count(largest.resources.length)} | ${mib(largest.bytes)} | server \`--max-snapshot-bytes\` 16 MiB, \`--max-resources\` 50,000 (the agent's 64 MiB is larger) | bytes ${fits(largest.bytes, DEFAULT_LIMITS.maxSnapshotBytes)}; resources ${fits(largest.resources.length, DEFAULT_LIMITS.maxResources)} |`,
    out
      ? `| largest output (${out.cluster}) | ${count(out.resources)} | ${mib(out.canonicalBytes)} (${kib(out.wireBytes)} on the wire, full) | agent \`--max-snapshot-bytes\` 64 MiB, 200,000 output resources | bytes ${fits(out.canonicalBytes, DEFAULT_LIMITS.agentMaxSnapshotBytes)}; resources ${fits(out.resources, DEFAULT_LIMITS.maxOutputResources)} |`
      : '| largest output | – | – | | not translated |',
    '',
  ];
}

function processLines(r: TierReport): string[] {
  const flags =
    r.options.serverFlags.length > 0
      ? `default flags except \`${r.options.serverFlags.join(' ')}\` (every agent of the bench connects from 127.0.0.1)`
      : 'default flags';
  return [
    '## Processes',
    '',
    `One redis-server, one \`meshrelay-server\` child process (${flags}, \`--redis-url\`, admin token, state dir in a temp dir), ${r.live.processes ?? r.options.processes} load-generator processes running ${r.options.shape.clusters - r.options.realAgents.length} relay clients (the agent's own \`RelayClient\`, mTLS, the agent's default heartbeats and limits), dealt round-robin; ${r.options.realAgents.length} real \`meshrelay-agent\` processes (${r.options.realAgents.join(', ') || 'none'}; see the whole path below); the baseline and floors run in the bench process after the live phases; the agent footprint is one \`meshrelay-agent\` process.`,
    '',
    '| phase | status | seconds | |',
    '|---|---|---:|---|',
    ...r.phases.map((p) => `| ${p.name} | ${p.status} | ${p.seconds.toFixed(1)} | ${p.reason ?? ''} |`),
    '',
  ];
}

function changeFigures(r: TierReport): {
  latency?: Spread;
  bytes?: Spread;
  baselineMs?: Spread;
  fullBytes?: Spread;
  unaffectedBytes: number;
  mismatches: number;
} {
  const changes = r.live.changes;
  const latency = spread(changes.map((c) => Math.max(...c.appliedMs.values())));
  const bytes = spread(changes.flatMap((c) => [...c.bytes.values()].map((b) => b.wireBytes)));
  const baselineMs = spread(r.baseline.changes.map((b) => b.ms));
  const fullBytes = spread(r.baseline.changes.flatMap((b) => [...b.fullBytes.values()]));
  let mismatches = 0;
  let unaffectedBytes = 0;
  changes.forEach((c, i) => {
    const expected = r.baseline.changes[i]?.affected;
    if (expected === undefined) return;
    const got = [...c.bytes.keys()].sort();
    if (JSON.stringify(got) !== JSON.stringify([...expected].sort())) mismatches++;
    for (const [cluster, b] of c.bytes) if (!expected.includes(cluster)) unaffectedBytes += b.wireBytes;
  });
  return { latency, bytes, baselineMs, fullBytes, unaffectedBytes, mismatches };
}

/**
 * The p50 of each stage of the changed cluster's path (see ChangeSample.stages), over the changes that saw every event.
 */
function stagesText(changes: TierReport['live']['changes']): string {
  const staged = changes.flatMap(({ stages: s }) =>
    s.pushedAt !== undefined && s.ackedAt !== undefined && s.receivedAt !== undefined && s.appliedAt !== undefined
      ? [
          {
            push: s.pushedAt,
            ack: s.ackedAt - s.pushedAt,
            output: s.receivedAt - s.ackedAt,
            apply: s.appliedAt - s.receivedAt,
          },
        ]
      : [],
  );
  if (staged.length === 0) return '–';
  const p50 = (pick: (s: (typeof staged)[number]) => number) => ms(quantile(staged.map(pick), 0.5));
  return `push ${p50((s) => s.push)}, ack ${p50((s) => s.ack)}, output ${p50((s) => s.output)}, apply ${p50((s) => s.apply)} (n = ${staged.length})`;
}

/** When each event of the changed cluster came, ms after the offer. */
function timelineText(s: ChangeStages): string {
  const at = (v: number | undefined) => (v === undefined ? '–' : String(v));
  const early = s.receivedBeforeAck > 0 ? `, ${s.receivedBeforeAck} output frame(s) before the ack` : '';
  return ` [pushed +${at(s.pushedAt)}, acked +${at(s.ackedAt)}, output +${at(s.receivedAt)}, applied +${at(s.appliedAt)} ms${early}]`;
}

function figureLines(r: TierReport): string[] {
  const { live, baseline } = r;
  const f = changeFigures(r);
  const floors = baseline.floors;
  const services = r.options.shape.clusters * r.options.shape.servicesPerCluster;
  const endpoints = services * r.options.shape.endpointsPerService;
  const mem = live.memory;
  const settled = live.settledMemory;
  const storm = live.storm;
  const row = (figure: string, value: string, against: string, ratio: string) =>
    `| ${figure} | ${value} | ${against} | ${ratio} |`;
  return [
    '## Figures',
    '',
    '| figure | measured | baseline or floor (same run) | ratio |',
    '|---|---|---|---:|',
    row(
      'cold start: every agent applied its first output',
      ms(live.cold?.firstOutputMs),
      `naive: one full \`translate()\` + full framing of every output ${ms(baseline.cold?.ms)}`,
      times(live.cold?.firstOutputMs, baseline.cold?.ms),
    ),
    row(
      'cold start: every agent applied its first complete output (provenance = all initial inputs)',
      ms(live.cold?.completeOutputMs),
      `naive cold recompute + full resend ${ms(baseline.cold?.ms)}`,
      times(live.cold?.completeOutputMs, baseline.cold?.ms),
    ),
    row(
      `one endpoint changed → every affected agent applied it (${f.latency?.n ?? 0} changes)`,
      spreadText(f.latency, ms),
      `naive full recompute + full resend: ${spreadText(f.baselineMs, ms)}`,
      `p50 ${times(f.latency?.p50, f.baselineMs?.p50)}, p99 ${times(f.latency?.p99, f.baselineMs?.p99)}`,
    ),
    row(
      '… of which, for the changed cluster (p50 of each stage)',
      stagesText(live.changes),
      'offered → pushed: input delta built and sent; → acked: server intake; → output arrived: translation, output delta, send; → applied: patch, hash check, apply',
      '',
    ),
    row(
      'the same, against the encoding floor of one output',
      f.latency ? ms(f.latency.p50) : '–',
      `wire framing (gzip + protobufjs) of ${floors?.oneCluster ?? '–'}'s output ${floors ? `${floors.wireOne.medianMs.toFixed(2)} ms` : '–'}`,
      times(f.latency?.p50, floors?.wireOne.medianMs),
    ),
    row(
      'bytes on the wire per affected agent for the change',
      spreadText(f.bytes, kib),
      `full resend of the affected agent's output: ${spreadText(f.fullBytes, kib)}`,
      `p50 ${times(f.bytes?.p50, f.fullBytes?.p50)}`,
    ),
    row(
      'agents affected per change',
      live.changes.length > 0 ? `${spreadText(spread(live.changes.map((c) => c.bytes.size)), String)}` : '–',
      `baseline (outputs whose hash changed): ${spreadText(spread(baseline.changes.map((b) => b.affected.length)), String)}`,
      `${f.mismatches} of ${Math.min(live.changes.length, baseline.changes.length)} changes differ`,
    ),
    row(
      'bytes sent to agents the change did not affect',
      live.changes.length > 0 ? `${f.unaffectedBytes} B` : '–',
      'target 0',
      '',
    ),
    row(
      'server RSS after convergence (read as every agent has its complete output)',
      mib(mem?.rssBytes),
      `${perUnit(mem?.rssBytes, services, endpoints)}; high-water ${mib(mem?.rssHighWaterBytes)}`,
      '',
    ),
    row(
      'server V8 heap used after convergence',
      mib(mem?.heapUsedBytes),
      perUnit(mem?.heapUsedBytes, services, endpoints),
      '',
    ),
    row(
      `server RSS once settled (idle ${r.options.settleIdleSeconds} s after going quiet, before the changes)`,
      mib(settled?.rssBytes),
      `${perUnit(settled?.rssBytes, services, endpoints)}; ${reclaimText(settled)}`,
      '',
    ),
    row(
      'server V8 heap used once settled',
      mib(settled?.heapUsedBytes),
      perUnit(settled?.heapUsedBytes, services, endpoints),
      '',
    ),
    row(
      'reconnect storm: every agent resynced after kill -9 + restart',
      storm
        ? `${ms(storm.resyncFromRestartMs)} from restart (${ms(storm.resyncFromHealthyMs)} from /healthz; /healthz answered after ${ms(storm.healthyFromRestartMs)}, the first agent resynced after ${ms(storm.firstResyncFromRestartMs)}, half of them after ${ms(storm.medianResyncFromRestartMs)})`
        : '–',
      `cold start ${ms(live.cold?.completeOutputMs)}`,
      times(storm?.resyncFromRestartMs, live.cold?.completeOutputMs),
    ),
    row(
      "reconnect storm: the restarted server's longest event-loop delay until every agent had resynced",
      ms(storm?.loopDelayMaxMs),
      `/healthz answered after ${ms(storm?.healthyFromRestartMs)}`,
      '',
    ),
    row(
      'reconnect storm: bytes re-sent to agents whose output did not change',
      storm ? `${storm.bytesResent} B to ${storm.agents} agents` : '–',
      'target 0',
      '',
    ),
    row('reconnect storm: re-applies', storm ? String(storm.reApplies) : '–', 'target 0', ''),
    row(
      "cold full translation in the server (the restarted server's first run: a fresh engine over every input)",
      ms(storm?.coldTranslationMs),
      `naive: the baseline's first \`translate()\` ${ms(baseline.cold?.translateMs)}`,
      times(storm?.coldTranslationMs, baseline.cold?.translateMs),
    ),
    row(
      'validation of the inputs the restarted server loaded from Redis, before that run (its intake of stored inputs; translation does not validate them again)',
      ms(storm?.storedValidationMs),
      `the cold translation ${ms(storm?.coldTranslationMs)}`,
      times(storm?.storedValidationMs, storm?.coldTranslationMs),
    ),
    row(
      'encoding floor: canonical JSON of all outputs',
      floors ? `${floors.canonical.medianMs.toFixed(1)} ms` : '–',
      `naive recompute ${ms(f.baselineMs?.p50)}`,
      times(f.baselineMs?.p50, floors?.canonical.medianMs),
    ),
    row(
      'encoding floor: gzip + protobufjs frames of all outputs',
      floors ? `${floors.wire.medianMs.toFixed(1)} ms` : '–',
      `naive recompute ${ms(f.baselineMs?.p50)}`,
      times(f.baselineMs?.p50, floors?.wire.medianMs),
    ),
    '',
    "Applied = the relay client's `applyOutput` callback finished for the output that carries the change (the new endpoint address appears in it); times run from the load generator offering the changed input snapshot. " +
      `The changes start once the server went quiet after convergence (under 10 % of a core for 2 s in a row: the kept contributions and outputs a cold start writes to the shared state are written)${quietText(r.live.quiet)}. ` +
      'Bytes = what the relay client received per output: encoded snapshot header plus chunk payload (as `relay_snapshot_bytes_total` counts), summed per agent over the change. ' +
      'The baseline applies the same changes to the same inputs in this process (a fresh `translate()` of everything plus every output framed full); affected = outputs whose hash changed. Floors: medians of 5 interleaved rounds.',
    '',
  ];
}

/** The idle memory reclaims the server had run by the reading (meshrelay_memory_reclaim_duration_seconds). */
function reclaimText(m: TierReport['live']['settledMemory']): string {
  if (m?.reclaims === undefined) return 'idle reclaims: not reported';
  if (m.reclaims === 0) return 'no idle reclaim had run';
  return `${m.reclaims} idle reclaim${m.reclaims === 1 ? '' : 's'} had run, pausing the server ${ms((m.reclaimSeconds ?? 0) * 1000)} in all`;
}

function quietText(quiet: TierReport['live']['quiet']): string {
  if (!quiet) return '';
  const after = `${(quiet.afterMs / 1000).toFixed(1)} s`;
  return quiet.reached
    ? `, ${after} after convergence in this run`
    : `; in this run it was still at ${Math.round(quiet.share * 100)} % of a core after ${after}, and the changes started then`;
}

/** a + b, or undefined when either is unknown. */
function sum(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a + b;
}

function met(value: number | undefined, limit: number): string {
  if (value === undefined || Number.isNaN(value)) return 'not measured';
  return value <= limit ? 'met' : '**missed**';
}

/** Issue 11.4's targets (set for tier M on a 2-core machine), next to this run's figures. */
function targetLines(r: TierReport): string[] {
  const f = changeFigures(r);
  const { storm, memory, settledMemory } = r.live;
  const a = r.footprint;
  const row = (target: string, value: string, verdict: string) => `| ${target} | ${value} | ${verdict} |`;
  return [
    '## Targets (issue 11.4, set for tier M)',
    '',
    '| target | this run | |',
    '|---|---|---|',
    row(
      'cold full translation ≤ 3 s',
      `${ms(storm?.coldTranslationMs)} in the server (its first run after the restart), after ${ms(storm?.storedValidationMs)} validating the inputs it loaded (${ms(sum(storm?.coldTranslationMs, storm?.storedValidationMs))} together); ${ms(r.baseline.cold?.translateMs)} for the baseline's first \`translate()\`, which validates as it goes`,
      met(storm?.coldTranslationMs, 3000),
    ),
    row(
      'one endpoint change → all affected agents applied: p50 ≤ 200 ms',
      ms(f.latency?.p50),
      met(f.latency?.p50, 200),
    ),
    row('… p99 ≤ 1 s', ms(f.latency?.p99), met(f.latency?.p99, 1000)),
    row(
      '≤ 2 KB on the wire per affected agent',
      f.bytes ? `p50 ${f.bytes.p50.toFixed(0)} B, max ${f.bytes.max.toFixed(0)} B` : '–',
      met(f.bytes?.max, 2000),
    ),
    row(
      'server RSS ≤ 1.5 GB (1,430 MiB), settled',
      `${mib(settledMemory?.rssBytes)} settled; ${mib(memory?.rssBytes)} as the cold start converged`,
      met(settledMemory?.rssBytes, 1.5e9),
    ),
    row(
      'reconnect storm resynced ≤ 10 s',
      storm ? ms(storm.resyncFromRestartMs) : '–',
      met(storm?.resyncFromRestartMs, 10_000),
    ),
    row(
      '… with zero bytes re-sent to unchanged agents',
      storm ? `${storm.bytesResent} B` : '–',
      met(storm?.bytesResent, 0),
    ),
    row(
      'agent ≤ 128 MB RSS (11.5)',
      a ? `${a.rssMiB} MiB` : '–',
      met(a === undefined ? undefined : a.rssMiB * MiB, 128e6),
    ),
    row(
      'agent idle CPU ≤ 1 % of a core (11.5)',
      a ? `${a.idleCpuPercentOfCore} %` : '–',
      met(a?.idleCpuPercentOfCore, 1),
    ),
    '',
  ];
}

function footprintLines(r: TierReport): string[] {
  const a = r.footprint;
  if (!a) return ['## Light agent (issue 11.5)', '', 'Not measured in this run.', ''];
  return [
    '## Light agent (issue 11.5)',
    '',
    `One \`meshrelay-agent\` process, file provider, at one cluster of this shape (${count(a.resources)} resources in ${a.files} files), started after \`meshrelay-agent --help\` warmed its compile cache (as an install or image build does): RSS ${a.rssMiB} MiB after an idle window (high-water ${a.rssHighWaterMiB} MiB; target ≤ 128 MB at tier M), idle CPU ${a.idleCpuPercentOfCore} % of one core over ${a.idleSeconds} s (target ≤ 1 %), first snapshot after ${a.startMs} ms, one file edit → new snapshot in ${a.editMs} ms.`,
    '',
  ];
}

function sampleLines(r: TierReport): string[] {
  if (r.live.changes.length === 0) return [];
  return [
    '### Changes (live)',
    '',
    ...r.live.changes.map(
      (c) =>
        `- #${c.change.index} ${c.change.cluster}/${c.change.service} → ${c.change.address}: ${[...c.bytes].map(([cluster, b]) => `${cluster} ${ms(c.appliedMs.get(cluster))}, ${b.wireBytes} B (${b.kinds.join('+')})`).join('; ')}${timelineText(c.stages)}`,
    ),
    '',
  ];
}

export function renderTierSection(r: TierReport): string {
  return [
    ...header(r),
    ...workloadLines(r),
    ...processLines(r),
    ...figureLines(r),
    ...wholePathLines(r),
    ...footprintLines(r),
    ...targetLines(r),
    ...sampleLines(r),
  ].join('\n');
}
