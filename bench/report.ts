/** Renders one benchmark run as bench/RESULTS.md (also printed to stdout). */
import { cpus, loadavg, release, totalmem } from 'node:os';
import type { Measurement, MeasureOptions } from './measure.ts';
import type { WorkloadCounts, WorkloadShape } from './workload.ts';

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly totalMemoryBytes: number;
  readonly osRelease: string;
  readonly platform: string;
  readonly arch: string;
  readonly node: string;
  readonly v8: string;
  /** 1-minute load average when the run started: other processes share the cores. */
  readonly loadAverage1m: number;
}

/** The machine the bench runs on, read from node:os and process. */
export function describeMachine(): MachineInfo {
  return {
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    totalMemoryBytes: totalmem(),
    osRelease: release(),
    platform: process.platform,
    arch: process.arch,
    node: process.version,
    v8: process.versions.v8,
    loadAverage1m: loadavg()[0] ?? 0,
  };
}

export interface Figure {
  /** Short name used in the ratio sentences, e.g. "JSON.stringify of its output". */
  readonly label: string;
  /** What exactly the timed span covers. */
  readonly covers: string;
  readonly measurement: Measurement<unknown>;
  /** A reference point rather than a floor of the output (listed apart in the ratios). */
  readonly context?: boolean;
}

export interface OutputSizes {
  readonly clusters: number;
  readonly resources: number;
  readonly resourcesByKind: Readonly<Record<string, number>>;
  readonly canonicalBytes: number;
  readonly stringifyBytes: number;
  readonly wireBytes: number;
  readonly wireMessages: number;
  readonly wireBytesUncompressed: number;
  readonly wireMessagesUncompressed: number;
  /** sha256 over the outputs' hashes in cluster order; equal in every timed run. */
  readonly digest: string;
}

export interface BenchReport {
  readonly startedAt: Date;
  readonly totalSeconds: number;
  readonly machine: MachineInfo;
  readonly loadAverage1mAtEnd: number;
  readonly tier: string;
  readonly shape: WorkloadShape;
  readonly counts: WorkloadCounts;
  readonly options: MeasureOptions;
  readonly workloadMs: number;
  readonly coldTranslationMs: number;
  readonly translation: Figure;
  readonly floors: readonly Figure[];
  readonly outputs: OutputSizes;
}

const ms = (value: number): string => value.toFixed(2);
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
const gib = (bytes: number): string => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
const count = (value: number): string => value.toLocaleString('en-US');

/** translation median ÷ floor median, as "14.2×". */
export function ratio(translation: Figure, floor: Figure): string {
  return `${(translation.measurement.medianMs / floor.measurement.medianMs).toFixed(1)}×`;
}

function byKind(kinds: Readonly<Record<string, number>>): string {
  return Object.entries(kinds)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([kind, n]) => `${kind} ${count(n)}`)
    .join(', ');
}

function machineSection(r: BenchReport): string[] {
  const m = r.machine;
  return [
    '## Machine',
    '',
    '| | |',
    '|---|---|',
    `| CPU | ${m.cpuModel} × ${m.cores} cores |`,
    `| memory | ${gib(m.totalMemoryBytes)} |`,
    `| OS | ${m.platform} ${m.osRelease} (${m.arch}) |`,
    `| Node | ${m.node} (V8 ${m.v8}) |`,
    `| load average (1 min) at start / end | ${m.loadAverage1m.toFixed(2)} / ${r.loadAverage1mAtEnd.toFixed(2)} |`,
    '',
  ];
}

function workloadSection(r: BenchReport): string[] {
  const c = r.counts;
  const k = c.inputsByKind;
  return [
    `## Workload (tier ${r.tier})`,
    '',
    '| | |',
    '|---|---|',
    `| clusters | ${c.clusters} in ${c.regions} regions; ${c.nodesPerCluster} Nodes each (one zone per Node) and an east-west gateway Service each |`,
    `| services per cluster | ${c.servicesPerCluster} (\`svc-000\`…, in ${c.namespaces} namespaces; one http port each) |`,
    `| endpoints per service | ${c.endpointsPerService} ready endpoints (EndpointSlice → Pod → Node) |`,
    `| exported services | ${c.exportedServices} per cluster (the same names in every cluster), ${c.virtualDestinations} VirtualDestinations defined in cluster-0, each selecting its service by label in all ${c.clusters} clusters |`,
    `| other Gloo resources (cluster-0) | ${k['RouteTable'] ?? 0} RouteTables, ${k['AccessPolicy'] ?? 0} AccessPolicies, ${k['FailoverPolicy'] ?? 0} FailoverPolicy, ${k['OutlierDetectionPolicy'] ?? 0} OutlierDetectionPolicy, ${k['RetryTimeoutPolicy'] ?? 0} RetryTimeoutPolicy |`,
    `| input resources | ${count(c.inputResources)} (${byKind(k)}) |`,
    `| input snapshots | ${kib(c.inputBytes)} canonical JSON over all clusters |`,
    `| input digest | \`${c.inputDigest}\` (seed ${r.shape.seed}; equal on every machine) |`,
    `| output resources | ${count(r.outputs.resources)} over ${r.outputs.clusters} clusters (${byKind(r.outputs.resourcesByKind)}) |`,
    `| output digest | \`${r.outputs.digest}\` (identical in every timed run) |`,
    '',
  ];
}

function figuresSection(r: BenchReport): string[] {
  const rows = [r.translation, ...r.floors].map((f) => {
    const m = f.measurement;
    const share = f === r.translation ? '1.0×' : ratio(r.translation, f);
    return `| ${f.label} | ${f.covers} | **${ms(m.medianMs)}** | ${ms(m.p25Ms)}–${ms(m.p75Ms)} | ${ms(m.minMs)} | ${ms(m.maxMs)} | ${m.samplesMs.length} | ${share} |`;
  });
  return [
    '## Figures',
    '',
    `All figures were measured in one process, in ${r.options.runs} interleaved rounds after ${r.options.warmups} untimed warm-up rounds: ` +
      'each round runs every figure once (starting with a different one each round) and times it with `process.hrtime.bigint()`, ' +
      'so load from other processes and garbage-collection debt fall on all figures alike. ' +
      'Workload generation, VIP allocation and building the output validator happen once, outside every timed span. ' +
      "The encoding figures encode the translation's outputs, which are identical in every run (same output digest).",
    '',
    '| figure | timed span (all clusters) | median ms | p25–p75 ms | min ms | max ms | runs | translation ÷ figure |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    '### Ratios (medians)',
    '',
    ...r.floors.filter((f) => f.context !== true).map((f) => `- translation = ${ratio(r.translation, f)} ${f.label}`),
    ...r.floors
      .filter((f) => f.context === true)
      .map((f) => `- context: translation = ${ratio(r.translation, f)} ${f.label}`),
    '',
  ];
}

function bytesSection(r: BenchReport): string[] {
  const o = r.outputs;
  return [
    '## Output bytes',
    '',
    '| | bytes | |',
    '|---|---:|---|',
    `| canonical JSON (what output hashes cover) | ${count(o.canonicalBytes)} | ${kib(o.canonicalBytes)}, ${kib(o.canonicalBytes / o.clusters)} per cluster |`,
    `| JSON.stringify | ${count(o.stringifyBytes)} | ${kib(o.stringifyBytes)} |`,
    `| wire, as sent (gzip above 64 KiB, 256 KiB chunks) | ${count(o.wireBytes)} | ${count(o.wireMessages)} PullResponse messages; ${(o.canonicalBytes / o.wireBytes).toFixed(1)}× smaller than canonical |`,
    `| wire, uncompressed | ${count(o.wireBytesUncompressed)} | ${count(o.wireMessagesUncompressed)} PullResponse messages |`,
    '',
    'Wire bytes are serialized protobuf messages; gRPC adds 5 bytes of framing per message on top.',
    '',
  ];
}

/** Half the cores busy with other work is where absolute times start to drift between runs. */
function busyNote(r: BenchReport): string[] {
  const load = Math.max(r.machine.loadAverage1m, r.loadAverage1mAtEnd);
  if (load < r.machine.cores / 2) return [];
  return [
    `- The machine was busy during this run (1-minute load average up to ${load.toFixed(2)} on ${r.machine.cores} cores): ` +
      'absolute times are inflated and spread (see p25–p75 and the samples); the ratios, measured in interleaved rounds, are the figures to compare.',
  ];
}

function notesSection(r: BenchReport): string[] {
  return [
    '## Notes',
    '',
    ...busyNote(r),
    `- The first translation in the process (cold: JIT warm-up, input schema compilation) took ${ms(r.coldTranslationMs)} ms; one sample, not in the table.`,
    `- Generating the workload (building and hashing ${r.counts.clusters} input snapshots) took ${ms(r.workloadMs)} ms; not part of any figure.`,
    `- The whole bench took ${r.totalSeconds.toFixed(1)} s.`,
    "- Every run's outputs are checked (all clusters translated, no problems, same output digest), and the wire frames are decoded and reassembled once to the outputs' hashes, outside the timed spans.",
    '',
    '### Samples (ms, in run order)',
    '',
    ...[r.translation, ...r.floors].map((f) => `- ${f.label}: ${f.measurement.samplesMs.map(ms).join(', ')}`),
    '',
  ];
}

export function renderResults(r: BenchReport): string {
  return [
    '# Meshrelay benchmark results',
    '',
    `Generated by \`npm run bench\` (bench/run.ts) on ${r.startedAt.toISOString()}.`,
    '',
    `These are the figures of one run on the machine described below. They say nothing about other machines; ` +
      'the ratios compare figures measured in the same process during the same run, which is what makes them comparable. ' +
      'The machine may be shared with other work (see the load average), which inflates the maxima more than the medians.',
    '',
    ...machineSection(r),
    ...workloadSection(r),
    ...figuresSection(r),
    ...bytesSection(r),
    ...notesSection(r),
  ].join('\n');
}
