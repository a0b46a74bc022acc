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
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { buildOutputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { FileOutputWriter } from '@meshrelay/agent';

const { values } = parseArgs({
  options: {
    resources: { type: 'string', default: '400' },
    bytes: { type: 'string', default: String(7.5 * 1024 * 1024) },
    runs: { type: 'string', default: '7' },
  },
});
const RESOURCES = Number(values.resources);
const BYTES = Number(values.bytes);
const RUNS = Number(values.runs);

/** A ServiceEntry of `endpoints` addresses (~48 bytes of JSON each), the bulk of a real output. */
function serviceEntry(i: number, endpoints: number, seed: number): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: `svc-${String(i).padStart(4, '0')}`, namespace: 'meshrelay-imports', labels: { 'meshrelay.io/owned-by': 'meshrelay' } },
    spec: {
      hosts: [`svc-${i}.global`],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ number: 9080, name: 'http', protocol: 'HTTP' }],
      endpoints: Array.from({ length: endpoints }, (_, e) => ({ address: `10.${(i >> 8) & 255}.${i & 255}.${(e + seed) % 250}`, ports: { http: 15443 + (e % 7) }, weight: 1 + ((e * 7 + seed) % 13) })),
    },
  };
}

/** Changes applied after the first in each run. */
const STEADY_CHANGES = 4;

function outputs(): { first: OutputSnapshot; changes: OutputSnapshot[] } {
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

async function main(): Promise<void> {
  const { first, changes } = outputs();
  const logger = pino({ level: 'silent' });
  const full: number[] = [];
  const change: number[] = [];
  const steady: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const root = await mkdtemp(path.join(tmpdir(), 'meshrelay-agent-apply-'));
    try {
      const writer = new FileOutputWriter({ cluster: 'east', outputDir: path.join(root, 'out'), stateDir: path.join(root, 'state'), logger });
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
  const report = {
    resources: RESOURCES,
    outputBytes: first.bytes,
    runs: RUNS,
    // Other work on the machine inflates CPU time (caches, frequency): the load says how much there was.
    loadAverage1m: round(loadavg()[0] ?? 0),
    baselineFullApplyCpuMs: round(median(full)),
    firstChangeCpuMs: round(median(change)),
    steadyChangeCpuMs: round(median(steady)),
    steadyToBaseline: Math.round((median(steady) / median(full)) * 10_000) / 10_000,
    samples: { full: full.map(round), firstChange: change.map(round), steadyChange: steady.map(round) },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

await main();
