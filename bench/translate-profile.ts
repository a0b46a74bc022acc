/**
 * Profiles translation at one workload shape: a cold full `translate()`, warm full
 * translations, and an incremental engine's cold run and its run after one endpoint
 * changed in one cluster. Medians of the warm runs, and the process's peak RSS.
 *
 *   node --max-old-space-size=8000 [--cpu-prof] bench/translate-profile.ts [clusters services endpoints nodes runs]
 *
 * PROFILE_MODE=full|incremental runs one side only; CHANGE_PROFILE=<file> writes a CPU profile
 * of the runs after one endpoint change only (in either mode), COLD_PROFILE=<file> one of the memory mode's cold run;
 * PRECOMPILE=1 compiles the output schemas before any run. PROFILE_MODE=memory keeps ONE engine, as the
 * server does: its cold run, then `runs` runs after one endpoint change each, with heapUsed and
 * RSS after each (after a full GC when run with --expose-gc). INTAKE=1 judges every input first, as
 * the server's intake does (then translation does not validate them again), and reports that apart.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { buildInputSnapshot, type InputSnapshot, type Resource } from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  IncrementalTranslator,
  allocateVips,
  createIstioValidator,
  InputJudgements,
  judgedClean,
  translate,
  validateInputResources,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { TIER_S, generateWorkload, serviceName } from './workload.ts';

const [clusters = 20, services = 200, endpoints = 5, nodes = 10, runs = 5] = process.argv.slice(2).map(Number);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ms = (start: number): number => performance.now() - start;
/**
 * CPU milliseconds (user + system) of this process since `start` (a `process.cpuUsage()`): less noisy than wall time on
 * a shared machine.
 */
const cpuMs = (start: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
};
const log = (line: string): void => void process.stderr.write(`${line}\n`);

const genStart = performance.now();
const workload = generateWorkload({
  ...TIER_S,
  clusters,
  servicesPerCluster: services,
  endpointsPerService: endpoints,
  nodesPerCluster: nodes,
});
log(
  `workload ${clusters}×${services}×${endpoints}: ${workload.counts.inputResources} input resources (${ms(genStart).toFixed(0)} ms)`,
);
// PRECOMPILE=1: the output schemas are compiled before the engine runs, as a server can do at start.
const validator = createIstioValidator({ precompile: process.env['PRECOMPILE'] === '1' });
const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
const judgements = new InputJudgements();
const base = { inputs: workload.inputs, clusters: workload.clusters, vips, judgements };
if (process.env['INTAKE'] === '1') {
  const intakeStart = performance.now();
  for (const input of workload.inputs.values()) {
    const judged = validateInputResources(input.resources);
    if (judgedClean(judged)) judgements.record(input.resources, true);
  }
  log(`inputs judged as intake does: ${ms(intakeStart).toFixed(0)} ms`);
}

/** The input of `cluster` with one endpoint address of an exported Service (the first, svc 0) changed. */
function oneEndpointChanged(
  inputs: ReadonlyMap<string, InputSnapshot>,
  cluster: string,
  n: number,
): Map<string, InputSnapshot> {
  const old = inputs.get(cluster) as InputSnapshot;
  let done = false;
  const resources = old.resources.map((r): Resource => {
    if (done || r.kind !== 'EndpointSlice' || r.metadata.labels?.['kubernetes.io/service-name'] !== serviceName(0))
      return r;
    done = true;
    const slice = structuredClone(r) as unknown as { endpoints: { addresses: string[] }[] };
    (slice.endpoints[0] as { addresses: string[] }).addresses = [`10.250.${(n >> 8) & 255}.${n & 255}`];
    return slice as unknown as Resource;
  });
  return new Map(inputs).set(
    cluster,
    buildInputSnapshot({ cluster, epoch: old.epoch, generation: old.generation + n, resources }),
  );
}

/** Starts a CPU profile when `file` is set; the returned function stops it and writes it there. */
async function startProfile(file: string | undefined): Promise<() => Promise<void>> {
  if (!file) return async () => {};
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

const mode = process.env['PROFILE_MODE'] ?? 'both';
const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MB`;
function memoryLine(label: string): string {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return `${label}: heapUsed ${mb(m.heapUsed)}, external ${mb(m.external)}, RSS ${mb(m.rss)}`;
}
if (mode === 'memory') {
  log(memoryLine('before the engine (workload in memory)'));
  const engine = new IncrementalTranslator(validator);
  const stopCold = await startProfile(process.env['COLD_PROFILE']);
  let start = performance.now();
  const cpuStart = process.cpuUsage();
  let result = await engine.run(base);
  await stopCold();
  log(`one engine, cold run: ${ms(start).toFixed(0)} ms (CPU ${cpuMs(cpuStart).toFixed(0)} ms)`);
  log(memoryLine('after the cold run'));
  let inputs: ReadonlyMap<string, InputSnapshot> = workload.inputs;
  const target = workload.clusters[Math.floor(clusters / 2)]?.name as string;
  const changed: number[] = [];
  const changedCpu: number[] = [];
  const stopProfile = await startProfile(process.env['CHANGE_PROFILE']);
  for (let i = 1; i <= runs; i++) {
    inputs = oneEndpointChanged(inputs, target, i);
    start = performance.now();
    const cpu = process.cpuUsage();
    result = await engine.run({ ...base, inputs, previousSecurityOutputs: result.securityOutputs });
    changed.push(ms(start));
    changedCpu.push(cpuMs(cpu));
  }
  await stopProfile();
  log(
    `one engine, runs after one endpoint change in ${target}: ${changed.map((x) => x.toFixed(0)).join(', ')} ms (median ${median(changed).toFixed(0)}; CPU median ${median(changedCpu).toFixed(0)} ms)`,
  );
  log(memoryLine(`after ${runs} change runs`));
}
if (mode !== 'incremental' && mode !== 'memory') {
  let start = performance.now();
  const cpuStart = process.cpuUsage();
  translate(base, validator);
  log(`full translate() cold: ${ms(start).toFixed(0)} ms (CPU ${cpuMs(cpuStart).toFixed(0)} ms)`);
  const warm: number[] = [];
  for (let i = 0; i < runs; i++) {
    start = performance.now();
    translate(base, validator);
    warm.push(ms(start));
  }
  log(`full translate() warm median of ${runs}: ${median(warm).toFixed(0)} ms`);
}
if (mode !== 'full' && mode !== 'memory') {
  // Cold: a fresh engine each time (nothing reused), in a warmed-up process.
  const cold: number[] = [];
  let engine = new IncrementalTranslator(validator);
  let result = await engine.run(base);
  for (let i = 0; i < runs; i++) {
    engine = new IncrementalTranslator(validator);
    const start = performance.now();
    result = await engine.run(base);
    cold.push(ms(start));
  }
  log(`engine cold run, median of ${runs}: ${median(cold).toFixed(0)} ms (first ${cold[0]?.toFixed(0)} ms)`);
  const changed: number[] = [];
  const stopProfile = await startProfile(process.env['CHANGE_PROFILE']);
  let inputs: ReadonlyMap<string, InputSnapshot> = workload.inputs;
  const target = workload.clusters[Math.floor(clusters / 2)]?.name as string;
  for (let i = 1; i <= runs + 1; i++) {
    inputs = oneEndpointChanged(inputs, target, i);
    const start = performance.now();
    result = await engine.run({ ...base, inputs, previousSecurityOutputs: result.securityOutputs });
    if (i > 1) changed.push(ms(start));
  }
  await stopProfile();
  log(
    `engine run after one endpoint change in ${target}, median of ${runs}: ${median(changed).toFixed(0)} ms (${changed.map((x) => x.toFixed(0)).join(', ')})`,
  );
}
log(`peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
