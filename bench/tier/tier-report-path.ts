/**
 * The whole-path part of a tier section (issue 26): real agents, the two change kinds, staggered arrivals, server
 * memory.
 */
import { quantile } from '../measure.ts';
import type { TierReport } from './tier-report.ts';
import type { KindChangeSample } from './whole-path.ts';

const MiB = 1024 * 1024;

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

const ms = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '–' : `${v.toFixed(0)} ms`);
const cpu = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '–' : `${v.toFixed(2)} s`);
const kib = (v: number | undefined): string => (v === undefined ? '–' : `${(v / 1024).toFixed(1)} KiB`);
const mib = (v: number | undefined): string => (v === undefined ? '–' : `${(v / MiB).toFixed(1)} MiB`);
const text = (s: Spread | undefined, unit: (v: number) => string): string =>
  s ? `p50 ${unit(s.p50)}, p99 ${unit(s.p99)}, max ${unit(s.max)} (n = ${s.n})` : '–';
const times = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || b === 0 || Number.isNaN(a) || Number.isNaN(b) ? '–' : `${(a / b).toFixed(3)}×`;

function met(value: number | undefined, limit: number): string {
  if (value === undefined || Number.isNaN(value)) return 'not measured';
  return value <= limit ? 'met' : '**missed**';
}

interface KindFigures {
  /** Per change: until the last expected agent applied. */
  readonly all?: Spread;
  /** Per (change, agent): each agent's own time. */
  readonly perAgent?: Spread;
  /** Per (change, real agent). */
  readonly realAgents?: Spread;
  /** Per change made through a real agent's manifest edit: until every expected agent applied. */
  readonly viaEdit?: Spread;
  readonly serverCpu?: Spread;
  readonly agentCpu?: Spread;
  readonly bytes?: Spread;
  /** Changes where an agent outside `expected` was sent bytes. */
  readonly strayBytes: number;
}

function kindFigures(samples: readonly KindChangeSample[], real: readonly string[]): KindFigures {
  const values = (pick: (s: KindChangeSample) => number[]) => samples.flatMap(pick);
  return {
    all: spread(values((s) => [Math.max(...s.appliedMs.values())])),
    perAgent: spread(values((s) => [...s.appliedMs.values()])),
    realAgents: spread(values((s) => [...s.appliedMs].filter(([c]) => real.includes(c)).map(([, v]) => v))),
    viaEdit: spread(values((s) => (s.viaRealAgent ? [Math.max(...s.appliedMs.values())] : []))),
    serverCpu: spread(values((s) => [s.serverCpuSeconds])),
    // Agents whose output changed: the agents that had to apply it (the owner also ran its discovery when the change
    // was its edit).
    agentCpu: spread(values((s) => [...s.agentCpuSeconds].filter(([c]) => s.expected.includes(c)).map(([, v]) => v))),
    bytes: spread(values((s) => [...s.bytes].filter(([c]) => s.expected.includes(c)).map(([, v]) => v))),
    strayBytes: samples.filter((s) => [...s.bytes.keys()].some((c) => !s.expected.includes(c))).length,
  };
}

/**
 * Median of the naive full recompute + full resend over the baseline's changes (what a plane without incremental work
 * pays per change).
 */
function naiveMs(r: TierReport): number | undefined {
  const runs = r.baseline.changes.map((b) => b.ms);
  return runs.length > 0 ? quantile(runs, 0.5) : undefined;
}

function naiveFullBytes(r: TierReport): number | undefined {
  const bytes = r.baseline.changes.flatMap((b) => [...b.fullBytes.values()]);
  return bytes.length > 0 ? quantile(bytes, 0.5) : undefined;
}

function kindRows(r: TierReport, kind: 'address' | 'readiness', f: KindFigures): string[] {
  const naive = naiveMs(r);
  const full = r.baseline.agentFullApply;
  const fullBytes = naiveFullBytes(r);
  const label =
    kind === 'address'
      ? "address change of one endpoint of an exported service (the owner's output changes)"
      : "readiness flip of one endpoint of an exported service (every cluster's output changes)";
  const row = (figure: string, value: string, against: string, ratio: string) =>
    `| ${figure} | ${value} | ${against} | ${ratio} |`;
  return [
    row(
      `${label} → every agent that must apply it applied it`,
      text(f.all, ms),
      `naive full recompute + full resend, p50 ${ms(naive)}`,
      `p50 ${times(f.all?.p50, naive)}, p99 ${times(f.all?.p99, naive)}`,
    ),
    row("… each agent's own time (per change and agent)", text(f.perAgent, ms), '', ''),
    row('… the real agents (file discovery, relay, `FileOutputWriter`)', text(f.realAgents, ms), '', ''),
    row("… changes made by editing a real agent's manifest file", text(f.viaEdit, ms), '', ''),
    row(
      '… server CPU-seconds per change (until the plane was quiet again)',
      text(f.serverCpu, cpu),
      `naive full recompute wall time (one core), p50 ${ms(naive)}`,
      `p50 ${times(f.serverCpu ? f.serverCpu.p50 * 1000 : undefined, naive)}`,
    ),
    row(
      '… CPU-seconds per change of each real agent whose output changed',
      text(f.agentCpu, cpu),
      full
        ? `full apply of ${full.cluster}'s output (${full.resources} resources, ${mib(full.bytes)}) by a fresh \`FileOutputWriter\`: ${cpu(full.cpuSeconds)}`
        : '–',
      `p50 ${times(f.agentCpu?.p50, full?.cpuSeconds)}`,
    ),
    row(
      '… bytes the server sent each agent whose output changed',
      text(f.bytes, kib),
      `full resend of an affected output, p50 ${kib(fullBytes)}`,
      `p50 ${times(f.bytes?.p50, fullBytes)}`,
    ),
    row('… changes that sent bytes to an agent whose output did not change', String(f.strayBytes), 'target 0', ''),
  ];
}

export function wholePathLines(r: TierReport): string[] {
  const { live } = r;
  const real = live.realAgents ?? r.options.realAgents;
  const address = kindFigures(
    live.kindChanges.filter((s) => s.change.kind === 'address'),
    real,
  );
  const readiness = kindFigures(
    live.kindChanges.filter((s) => s.change.kind === 'readiness'),
    real,
  );
  const st = live.staggered;
  const rss = live.rss;
  const naiveCold = r.baseline.cold?.ms;
  const row = (figure: string, value: string, against: string, ratio: string) =>
    `| ${figure} | ${value} | ${against} | ${ratio} |`;
  return [
    '## Whole path (issue 26): real agents, two change kinds, staggered arrivals',
    '',
    real.length > 0
      ? `Real agents: ${real.join(', ')} each run as a \`meshrelay-agent\` process (file provider reading the cluster's generated manifests from a directory, \`FileOutputWriter\` writing its outputs); the other ${r.options.shape.clusters - real.length} clusters are the load generators' relay clients. Applied = for a real agent its "output applied" log line with a new hash, for a relay client its \`applyOutput\` with a new hash. A change to a real agent's cluster is a rewrite of the service's manifest file (its discovery builds the input); to another cluster, the load generator offers the changed snapshot. The change kinds alternate their target between real-agent and relay-client clusters. An address change of a non-exported service changes no output (nothing outside its cluster refers to it), so the address change is made to an exported service's endpoint, which changes its owner's output only.`
      : 'No real agents in this run (`--real-agents 0`).',
    '',
    '| figure | measured | baseline (same run) | ratio |',
    '|---|---|---|---:|',
    row(
      `staggered cold start: inputs arriving evenly over ${r.options.staggerSeconds} s → every agent holds its complete output, after the last arrival`,
      st
        ? `${ms(st.completeAfterLastArrivalMs)} (real agents ${ms(st.realCompleteAfterLastArrivalMs)}; the last cluster started ${ms(st.lastArrivalMs)} into the window, the server accepted the last input ${ms(st.lastAcceptedMs)} into it)`
        : r.options.staggerSeconds === 0
          ? 'not run (`--stagger-seconds 0`: every input at once)'
          : '–',
      `naive cold recompute + full resend ${ms(naiveCold)}`,
      times(st?.completeAfterLastArrivalMs, naiveCold),
    ),
    ...kindRows(r, 'address', address),
    ...kindRows(r, 'readiness', readiness),
    row(
      'server RSS, sampled every 500 ms over the whole run',
      rss
        ? `high-water (VmHWM) ${mib(rss.hwmKiB * 1024)}, first read during "${rss.hwmPhase}"; highest sample ${mib(rss.maxRssKiB * 1024)} during "${rss.maxPhase}", ${rss.maxAtSeconds.toFixed(0)} s into the run (${rss.samples} samples)`
        : '–',
      `settled ${mib(live.settledMemory?.rssBytes)}`,
      times(rss ? rss.hwmKiB * 1024 : undefined, live.settledMemory?.rssBytes),
    ),
    '',
    'CPU-seconds = utime + stime of /proc/<pid>/stat, read once the server and the real agents had been under 10 % of a core for 1.5 s (or 30 s had passed) before the change, and again once they were that quiet after the last apply (the span includes heartbeats and idle work, a few ms per second). Bytes = the server\'s `relay_snapshot_bytes_total{direction="pull"}` per cluster over the same span.',
    '',
    '### Targets (issue 26, set for tier M)',
    '',
    '| target | this run | |',
    '|---|---|---|',
    `| 26.2: an every-cluster change costs the server ≤ 0.5 CPU-second | readiness flip: ${text(readiness.serverCpu, cpu)} | ${met(readiness.serverCpu?.max, 0.5)} |`,
    `| 26.3: inputs arriving evenly over 120 s → every agent holds its complete output ≤ 10 s after the last arrival | ${st ? `${ms(st.completeAfterLastArrivalMs)} (over ${(st.windowMs / 1000).toFixed(0)} s)` : '–'} | ${met(st?.completeAfterLastArrivalMs, 10_000)} |`,
    `| 26.4: readiness change → every agent applied, p99 ≤ 1 s | ${text(readiness.perAgent, ms)} | ${met(readiness.perAgent?.p99, 1000)} |`,
    `| 26.1 (on the whole path): a real agent applies a one-resource change at ≤ 20 ms of CPU | readiness flip, per agent whose output changed: ${text(readiness.agentCpu, cpu)} (its relay receive, patch and hash check included; the apply alone is in the agent-apply section) | ${met(readiness.agentCpu?.p50, 0.02)} |`,
    `| 26.5: server RSS ≤ 1.5 GB (1,430 MiB) at every point, high-water included | ${rss ? mib(rss.hwmKiB * 1024) : '–'} | ${met(rss ? rss.hwmKiB * 1024 : undefined, 1.5e9)} |`,
    '',
    ...changeList(live.kindChanges),
  ];
}

function changeList(samples: readonly KindChangeSample[]): string[] {
  if (samples.length === 0) return [];
  return [
    '### Whole-path changes',
    '',
    ...samples.map((s) => {
      const what = s.change.kind === 'address' ? `→ ${s.change.address}` : `ready ${String(s.change.ready)}`;
      const agents = [...s.agentCpuSeconds].map(([c, v]) => `${c} ${cpu(v)}`).join(', ');
      const bytes = [...s.bytes.values()].reduce((a, b) => a + b, 0);
      return `- ${s.change.kind} #${s.change.index} ${s.change.cluster}/${s.change.service} ${what} (${s.viaRealAgent ? 'manifest edit, real agent' : 'offered by a relay client'}): ${s.appliedMs.size} agents applied, last after ${ms(Math.max(...s.appliedMs.values()))}; server ${cpu(s.serverCpuSeconds)}; real agents ${agents || '–'}; ${kib(bytes)} sent in all`;
    }),
    '',
  ];
}
