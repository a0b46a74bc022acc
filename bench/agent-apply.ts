/**
 * `node bench/agent-apply.ts [--resources N] [--bytes B] [--runs R]`: the agent CPU that the file
 * applier (`FileOutputWriter`) spends applying an output, in this process (process.cpuUsage around
 * `apply()`, user + system, every thread: the file writes run on libuv's pool).
 *
 * Figures measured in the same run on the same outputs:
 * - baseline: the full apply of a 400-resource output of ~7.5 MB into empty directories (what a
 *   first apply, or an applier that writes the whole output again, costs);
 * - first change: the apply of the next output, which differs from the held one in one resource
 *   (the new version links the first version's files);
 * - steady change: each of the following one-resource changes (a new version is built from the
 *   directory of the version before the current one, which is no longer served).
 * Each is the median over `runs` fresh writers (new temp dirs), so no run reuses another's files.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { buildOutputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { FileOutputWriter } from '@meshrelay/agent';

export interface AgentApplyOptions {
  readonly resources: number;
  readonly bytes: number;
  readonly runs: number;
}

export const AGENT_APPLY_DEFAULTS: AgentApplyOptions = { resources: 400, bytes: 7.5 * 1024 * 1024, runs: 7 };

/** A ServiceEntry of `endpoints` addresses (~48 bytes of JSON each), the bulk of a real output. */
function serviceEntry(i: number, endpoints: number, seed: number): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: {
      name: `svc-${String(i).padStart(4, '0')}`,
      namespace: 'meshrelay-imports',
      labels: { 'meshrelay.io/owned-by': 'meshrelay' },
    },
    spec: {
      hosts: [`svc-${i}.global`],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ number: 9080, name: 'http', protocol: 'HTTP' }],
      endpoints: Array.from({ length: endpoints }, (_, e) => ({
        address: `10.${(i >> 8) & 255}.${i & 255}.${(e + seed) % 250}`,
        ports: { http: 15443 + (e % 7) },
        weight: 1 + ((e * 7 + seed) % 13),
      })),
    },
  };
}

/** Changes applied after the first in each run. */
const STEADY_CHANGES = 4;

function outputs({ resources: RESOURCES, bytes: BYTES }: AgentApplyOptions): {
  first: OutputSnapshot;
  changes: OutputSnapshot[];
} {
  const perResource = BYTES / RESOURCES;
  const endpoints = Math.max(1, Math.round(perResource / 62));
  const resources = Array.from({ length: RESOURCES }, (_, i) => serviceEntry(i, endpoints, 0));
  const provenance = [{ cluster: 'east', inputHash: 'a'.repeat(64) }];
  const first = buildOutputSnapshot({ cluster: 'east', resources, provenance });
  // One resource in the middle changes (endpoint weights, as a readiness flip does); the rest are the same objects.
  const changes: OutputSnapshot[] = [];
  let held = first;
  for (let k = 1; k <= 1 + STEADY_CHANGES; k++) {
    const changed = [...held.resources];
    const middle = Math.floor(RESOURCES / 2) + (k % 3);
    changed[middle] = serviceEntry(middle, endpoints, k);
    held = buildOutputSnapshot({ cluster: 'east', resources: changed, provenance }, held);
    changes.push(held);
  }
  return { first, changes };
}

function cpuMs(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

export interface AgentApplyReport {
  readonly resources: number;
  readonly outputBytes: number;
  readonly runs: number;
  readonly loadAverage1m: number;
  readonly baselineFullApplyCpuMs: number;
  readonly firstChangeCpuMs: number;
  readonly steadyChangeCpuMs: number;
  readonly steadyToBaseline: number;
  readonly samples: { readonly full: number[]; readonly firstChange: number[]; readonly steadyChange: number[] };
}

/** Agent CPU of one full apply of `output` into empty directories (a fresh writer), ms. */
export async function fullApplyCpuMs(output: OutputSnapshot): Promise<number> {
  const root = await mkdtemp(path.join(tmpdir(), 'meshrelay-agent-apply-'));
  try {
    const writer = new FileOutputWriter({
      cluster: output.cluster,
      outputDir: path.join(root, 'out'),
      stateDir: path.join(root, 'state'),
      logger: pino({ level: 'silent' }),
    });
    const start = process.cpuUsage();
    await writer.apply(output);
    const used = cpuMs(start);
    await writer.stop();
    return used;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Runs the measurement described in the file comment. */
export async function measureAgentApply(options: AgentApplyOptions = AGENT_APPLY_DEFAULTS): Promise<AgentApplyReport> {
  const { first, changes } = outputs(options);
  const logger = pino({ level: 'silent' });
  const full: number[] = [];
  const change: number[] = [];
  const steady: number[] = [];
  for (let run = 0; run < options.runs; run++) {
    const root = await mkdtemp(path.join(tmpdir(), 'meshrelay-agent-apply-'));
    try {
      const writer = new FileOutputWriter({
        cluster: 'east',
        outputDir: path.join(root, 'out'),
        stateDir: path.join(root, 'state'),
        logger,
      });
      let start = process.cpuUsage();
      await writer.apply(first);
      full.push(cpuMs(start));
      for (const [k, next] of changes.entries()) {
        start = process.cpuUsage();
        await writer.apply(next);
        (k === 0 ? change : steady).push(cpuMs(start));
      }
      await writer.stop();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }
  const round = (x: number): number => Math.round(x * 10) / 10;
  return {
    resources: options.resources,
    outputBytes: first.bytes,
    runs: options.runs,
    // Other work on the machine inflates CPU time (caches, frequency): the load says how much there was.
    loadAverage1m: round(loadavg()[0] ?? 0),
    baselineFullApplyCpuMs: round(median(full)),
    firstChangeCpuMs: round(median(change)),
    steadyChangeCpuMs: round(median(steady)),
    steadyToBaseline: Math.round((median(steady) / median(full)) * 10_000) / 10_000,
    samples: { full: full.map(round), firstChange: change.map(round), steadyChange: steady.map(round) },
  };
}

/** The measurement as a section of bench/RESULTS.md (issue 26.1's target: ≤ 20 ms for a one-resource change). */
export function agentApplySection(r: AgentApplyReport): string {
  const verdict = r.steadyChangeCpuMs <= 20 ? 'met' : '**missed**';
  return [
    `# Agent apply: one-resource change vs full apply (\`FileOutputWriter\`, in process)`,
    '',
    `A ${r.resources}-resource output of ${(r.outputBytes / 1024 / 1024).toFixed(1)} MiB (canonical), applied by a fresh \`FileOutputWriter\` into empty directories (the baseline: a full apply, as a first apply or a writer that rewrites everything pays), then changed in one resource at a time (a readiness flip's new endpoint weights). Agent CPU = \`process.cpuUsage()\` user + system around \`apply()\`, every thread; medians over ${r.runs} fresh writers; 1-minute load average ${r.loadAverage1m} at the end.`,
    '',
    '| figure | agent CPU (median) | baseline: full apply of the same output | ratio | target (issue 26.1) |',
    '|---|---:|---:|---:|---|',
    `| first one-resource change after the full apply | ${r.firstChangeCpuMs} ms | ${r.baselineFullApplyCpuMs} ms | ${(r.firstChangeCpuMs / r.baselineFullApplyCpuMs).toFixed(3)}× | |`,
    `| steady one-resource change | ${r.steadyChangeCpuMs} ms | ${r.baselineFullApplyCpuMs} ms | ${r.steadyToBaseline.toFixed(3)}× | ≤ 20 ms: ${verdict} |`,
    '',
    `Samples (ms): full ${r.samples.full.join(', ')}; first change ${r.samples.firstChange.join(', ')}; steady ${r.samples.steadyChange.join(', ')}.`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      resources: { type: 'string', default: String(AGENT_APPLY_DEFAULTS.resources) },
      bytes: { type: 'string', default: String(AGENT_APPLY_DEFAULTS.bytes) },
      runs: { type: 'string', default: String(AGENT_APPLY_DEFAULTS.runs) },
    },
  });
  const report = await measureAgentApply({
    resources: Number(values.resources),
    bytes: Number(values.bytes),
    runs: Number(values.runs),
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
