/**
 * `npm run bench -- --interest [--clusters 50] [--services 1000] [--endpoints 10] [--nodes 50] [--homes H]
 * [--call-share 10] [--changes 10]`: what interest-scoped outputs (DESIGN §17) save, in process, against
 * unscoped outputs of the same translation. Without `--homes` it runs H = 5 and H = 50 (capped at the
 * cluster count) and writes the `interest-scope` section of bench/RESULTS.md.
 *
 * The workload is the tier generator's (every 10th service exported through a VirtualDestination,
 * RouteTable and AccessPolicy defined in cluster-0), except that each exported service runs in
 * `--homes` clusters only (in the tier workload every cluster runs every service, so every cluster
 * holds a declared interest in every destination and scoping keeps everything). Each cluster holds
 * leases on `--call-share` % of the destinations. Changes: the first endpoint of an exported service
 * in one of its home clusters turns unready (or ready again), which every consumer of the
 * destination sees (the tier bench's address change is seen only in its own cluster: others reach
 * the service through that cluster's east-west gateway).
 *
 * Per change: the clusters whose output changed and the bytes each agent is sent (a delta with
 * patches, framed and compressed as the relay sends it), unscoped against scoped; the server CPU
 * of the translation and of the scoping.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import {
  KINDS,
  MeshrelayError,
  buildInputSnapshot,
  encodeSnapshotFor,
  type InputSnapshot,
  type OutputSnapshot,
  type Resource,
} from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  IncrementalTranslator,
  allocateVips,
  createIstioValidator,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { OutputScoper } from '../packages/mgmt-server/src/interests/output-scope.ts';
import { describeMachine } from './report.ts';
import { writeResultsSection } from './results-file.ts';
import { TIER_M, clusterName, generateWorkload, serviceName, type WorkloadShape } from './workload.ts';

export interface InterestScopeOptions {
  readonly shape: WorkloadShape;
  /** Clusters each exported service runs in. */
  readonly homes: number;
  /** Percentage of the destinations each cluster holds a lease on. */
  readonly callShare: number;
  readonly changes: number;
}

/** Totals over all changes of one run, unscoped against scoped. */
export interface InterestScopeResult {
  readonly options: InterestScopeOptions;
  readonly exportedServices: number;
  readonly coldMs: number;
  /** Mean canonical bytes of one cluster's output (what its agent holds). */
  readonly outputBytes: { readonly unscoped: number; readonly scoped: number };
  /** Cluster outputs that changed, summed over the changes. */
  readonly clustersSent: { readonly unscoped: number; readonly scoped: number };
  /** Delta bytes on the wire, summed over the changes and clusters. */
  readonly deltaBytes: { readonly unscoped: number; readonly scoped: number };
  readonly translationMs: number;
  readonly scopingMs: number;
}

/** The service a workload resource belongs to (Service, EndpointSlice, Pod), if any. */
function serviceOf(r: Resource): string | undefined {
  if (r.kind === KINDS.EndpointSlice.kind) return r.metadata.labels?.['kubernetes.io/service-name'];
  if (r.kind === KINDS.Service.kind || r.kind === KINDS.Pod.kind) return r.metadata.labels?.['app'];
  return undefined;
}

/** `resources` with the readiness of the first endpoint of `service`'s EndpointSlice flipped. */
function flipFirstEndpoint(resources: readonly Resource[], service: string): Resource[] {
  let flipped = false;
  const out = resources.map((r) => {
    if (flipped || r.kind !== KINDS.EndpointSlice.kind || r.metadata.labels?.['kubernetes.io/service-name'] !== service)
      return r;
    const copy = structuredClone(r) as Resource & { endpoints: { conditions: { ready?: boolean } }[] };
    const first = copy.endpoints[0];
    if (first === undefined) return r;
    const ready = first.conditions.ready !== false;
    first.conditions = { ready: !ready, serving: !ready, terminating: ready } as { ready: boolean };
    flipped = true;
    return copy;
  });
  if (!flipped)
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `no EndpointSlice of ${service} in the changed cluster`);
  return out;
}

/** CPU milliseconds (user + system) `work` takes. */
async function cpuOf<T>(work: () => Promise<T> | T): Promise<{ value: T; ms: number }> {
  const before = process.cpuUsage();
  const value = await work();
  const used = process.cpuUsage(before);
  return { value, ms: (used.user + used.system) / 1000 };
}

async function deltaBytes(base: OutputSnapshot, next: OutputSnapshot): Promise<number> {
  return (await encodeSnapshotFor(base, next, { patches: true })).wireBytes;
}

/** The workload of one run: which services are exported, where each runs, and the inputs without the rest. */
class HomedWorkload {
  readonly exported: number[];
  readonly inputs: Map<string, InputSnapshot>;
  readonly o: InterestScopeOptions;

  constructor(o: InterestScopeOptions) {
    this.o = o;
    const { shape } = o;
    this.exported = Array.from({ length: shape.servicesPerCluster }, (_, s) => s).filter(
      (s) => s % shape.exportEvery === 0,
    );
    this.inputs = this.#homedInputs();
  }

  /** The clusters running exported service `s`: `homes` of them, spread by the service's ordinal. */
  homesOf(s: number): number[] {
    const k = s / this.o.shape.exportEvery;
    return Array.from({ length: this.o.homes }, (_, i) => (k * this.o.homes + i) % this.o.shape.clusters);
  }

  /** Each cluster's held hosts: `callShare` % of the exported services' hosts, spread by cluster. */
  held(clusters: readonly string[]): Map<string, Set<string>> {
    const every = Math.round(100 / this.o.callShare);
    return new Map(
      clusters.map((name, i) => [
        name,
        new Set(this.exported.filter((_, k) => (k + i) % every === 0).map((s) => `${serviceName(s)}.global`)),
      ]),
    );
  }

  #homedInputs(): Map<string, InputSnapshot> {
    const away = new Map<string, Set<number>>();
    for (const s of this.exported) {
      const home = new Set(this.homesOf(s));
      const notHome = new Set<number>();
      for (let c = 0; c < this.o.shape.clusters; c++) if (!home.has(c)) notHome.add(c);
      away.set(serviceName(s), notHome);
    }
    const out = new Map<string, InputSnapshot>();
    for (const [cluster, input] of generateWorkload(this.o.shape).inputs) {
      const c = Number(cluster.slice(cluster.lastIndexOf('-') + 1));
      const resources = input.resources.filter((r) => {
        const service = serviceOf(r);
        return service === undefined || !(away.get(service)?.has(c) ?? false);
      });
      out.set(cluster, buildInputSnapshot({ cluster, epoch: input.epoch, generation: 1, resources }));
    }
    return out;
  }

  /** The inputs after change `i`: the first endpoint of an exported service flipped in its first home. */
  changed(current: Map<string, InputSnapshot>, i: number): Map<string, InputSnapshot> {
    const s = this.exported[i % this.exported.length] as number;
    const cluster = clusterName(this.homesOf(s)[0] as number);
    const before = current.get(cluster) as InputSnapshot;
    return new Map(current).set(
      cluster,
      buildInputSnapshot({
        cluster,
        epoch: before.epoch,
        generation: before.generation + 1,
        resources: flipFirstEndpoint(before.resources, serviceName(s)),
      }),
    );
  }
}

const meanBytes = (m: ReadonlyMap<string, OutputSnapshot>) => [...m.values()].reduce((n, o) => n + o.bytes, 0) / m.size;

/** Translates the workload, then applies the changes one by one, scoping every output each time. */
export async function measureInterestScope(o: InterestScopeOptions): Promise<InterestScopeResult> {
  const w = new HomedWorkload(o);
  const clusters = [...w.inputs.keys()].map((name) => ({ name }));
  const vips = allocateVips(new Map(), virtualDestinationKeys(w.inputs), DEFAULT_VIP_CIDR);
  const engine = new IncrementalTranslator(createIstioValidator());
  const cold = await cpuOf(() => engine.run({ inputs: w.inputs, clusters, vips }));
  const scoper = new OutputScoper();
  const held = w.held(clusters.map((c) => c.name));
  const scopeAll = (outputs: ReadonlyMap<string, OutputSnapshot>) =>
    new Map([...outputs].map(([name, out]) => [name, scoper.scope(out, held.get(name) ?? new Set()).output]));
  let unscoped = cold.value.outputs;
  let scoped = scopeAll(unscoped);
  const outputBytes = { unscoped: meanBytes(unscoped), scoped: meanBytes(scoped) };
  const t = { unscopedClusters: 0, scopedClusters: 0, unscopedBytes: 0, scopedBytes: 0, engineMs: 0, scopeMs: 0 };
  let current = w.inputs;
  for (let i = 0; i < o.changes; i++) {
    current = w.changed(current, i);
    const run = await cpuOf(() => engine.run({ inputs: current, clusters, vips }));
    const next = run.value.outputs;
    const nextScoped = await cpuOf(() => scopeAll(next));
    t.engineMs += run.ms;
    t.scopeMs += nextScoped.ms;
    for (const [name, out] of next) {
      const was = unscoped.get(name) as OutputSnapshot;
      if (was.hash !== out.hash) {
        t.unscopedClusters += 1;
        t.unscopedBytes += await deltaBytes(was, out);
      }
      const wasScoped = scoped.get(name) as OutputSnapshot;
      const isScoped = nextScoped.value.get(name) as OutputSnapshot;
      if (wasScoped.hash !== isScoped.hash) {
        t.scopedClusters += 1;
        t.scopedBytes += await deltaBytes(wasScoped, isScoped);
      }
    }
    unscoped = next;
    scoped = nextScoped.value;
  }
  return {
    options: o,
    exportedServices: w.exported.length,
    coldMs: cold.ms,
    outputBytes,
    clustersSent: { unscoped: t.unscopedClusters, scoped: t.scopedClusters },
    deltaBytes: { unscoped: t.unscopedBytes, scoped: t.scopedBytes },
    translationMs: t.engineMs,
    scopingMs: t.scopeMs,
  };
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
/** scoped / unscoped of the same run; 1.00 when both are 0 (nothing to leave out). */
const ratio = (pair: { readonly unscoped: number; readonly scoped: number }) =>
  (pair.unscoped === 0 ? (pair.scoped === 0 ? 1 : Number.POSITIVE_INFINITY) : pair.scoped / pair.unscoped).toFixed(2);

/** One run's table: every figure beside the unscoped baseline of the same run. */
export function renderInterestRun(r: InterestScopeResult, title: string): string {
  const { shape, homes, callShare, changes } = r.options;
  const per = (n: number) => n / changes;
  const perAgent = (n: number) => n / changes / shape.clusters;
  return [
    `### ${title}: ${shape.clusters} clusters × ${shape.servicesPerCluster} services × ${shape.endpointsPerService} endpoints, ${r.exportedServices} VirtualDestinations each run in ${homes} clusters, each cluster calling ${callShare} % of them; ${changes} readiness changes`,
    '',
    `Cold translation: ${Math.round(r.coldMs)} ms CPU.`,
    '',
    '| | unscoped | scoped | scoped / unscoped |',
    '|---|---:|---:|---:|',
    `| output per cluster, held by its agent (canonical bytes, mean) | ${kib(r.outputBytes.unscoped)} | ${kib(r.outputBytes.scoped)} | ${ratio(r.outputBytes)} |`,
    `| clusters sent an output per change | ${per(r.clustersSent.unscoped).toFixed(1)} | ${per(r.clustersSent.scoped).toFixed(1)} | ${ratio(r.clustersSent)} |`,
    `| bytes per agent per change (delta on the wire, mean over all agents) | ${kib(perAgent(r.deltaBytes.unscoped))} | ${kib(perAgent(r.deltaBytes.scoped))} | ${ratio(r.deltaBytes)} |`,
    `| server CPU per change: translation (ms) | ${per(r.translationMs).toFixed(1)} | ${per(r.translationMs).toFixed(1)} | 1.00 |`,
    `| server CPU per change: scoping (ms) | 0 | ${per(r.scopingMs).toFixed(1)} | — |`,
  ].join('\n');
}

function wholeNumber(flag: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `--${flag}: "${raw}" is not a whole number ≥ ${min}`);
  return Number(raw);
}

/** The runs `argv` asks for: its `--homes`, or H = 5 and H = every cluster (the tier workload). */
export function parseInterestArgs(argv: readonly string[]): InterestScopeOptions[] {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: Object.fromEntries(
        ['clusters', 'services', 'endpoints', 'nodes', 'homes', 'call-share', 'changes'].map((f) => [
          f,
          { type: 'string' as const },
        ]),
      ),
    }) as { values: Record<string, string | undefined> });
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `npm run bench -- --interest: ${(err as Error).message}`,
    );
  }
  const shape: WorkloadShape = {
    ...TIER_M,
    clusters: wholeNumber('clusters', values['clusters'], TIER_M.clusters, 2),
    servicesPerCluster: wholeNumber('services', values['services'], TIER_M.servicesPerCluster, 10),
    endpointsPerService: wholeNumber('endpoints', values['endpoints'], TIER_M.endpointsPerService, 1),
    nodesPerCluster: wholeNumber('nodes', values['nodes'], TIER_M.nodesPerCluster, 1),
  };
  const callShare = wholeNumber('call-share', values['call-share'], 10, 1);
  if (callShare > 100)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `--call-share: "${callShare}" is more than 100 %`);
  const changes = wholeNumber('changes', values['changes'], 10, 1);
  const homes =
    values['homes'] === undefined
      ? [Math.min(5, shape.clusters), shape.clusters]
      : [Math.min(wholeNumber('homes', values['homes'], 5, 1), shape.clusters)];
  return [...new Set(homes)].map((h) => ({ shape, homes: h, callShare, changes }));
}

const WORKLOADS =
  'In process: the incremental translator and the scoper of `--interest-scoped-outputs`; per change, the delta ' +
  'each agent whose output changed is sent (patches, framed and compressed as the relay sends it). The change ' +
  'turns the first endpoint of an exported service unready (or ready again) in one of its home clusters, which ' +
  'every consumer sees. In the tier workload every cluster runs every exported service (H = the cluster count), ' +
  'so each holds a declared interest (`backends-here`) in every destination and scoping can leave nothing out; ' +
  'with each exported service running in a few clusters (H = 5) and each cluster calling a share of the ' +
  'destinations, it does. Each figure is set beside the unscoped baseline of the same run. The output per ' +
  "cluster is also what that cluster's agent holds. VirtualDestinations carry no `rr.`/`closest.` policy hosts " +
  '(opt-in through `meshrelay.io/policy-addresses`). Not measured: the whole-path tier M run with real agents ' +
  'and load generators (`npm run bench -- --tier M`), nor agent apply CPU per change.';

/** `npm run bench -- --interest …`: runs what `argv` asks for; writes the `interest-scope` section of `resultsPath`. */
export async function runInterestBench(argv: readonly string[], resultsPath: string): Promise<string> {
  const runs = parseInterestArgs(argv);
  const startedAt = new Date();
  const m = describeMachine();
  const start = process.hrtime.bigint();
  const tables: string[] = [];
  for (const o of runs) {
    console.error(`interest-scope bench: H = ${o.homes}…`);
    const tierLike = o.homes === o.shape.clusters ? ' (the tier workload)' : '';
    tables.push(renderInterestRun(await measureInterestScope(o), `H = ${o.homes}${tierLike}`));
  }
  const text = [
    '## Interest-scoped outputs (issue 28)',
    '',
    `\`npm run bench -- --interest${argv.length > 0 ? ` ${argv.join(' ')}` : ''}\``,
    '',
    `Run on ${startedAt.toISOString()}: ${m.cpuModel} × ${m.cores} cores, ${(m.totalMemoryBytes / 1024 ** 3).toFixed(1)} GiB RAM, Node ${m.node}; ` +
      `1-minute load average ${m.loadAverage1m.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end (the machine is shared: ` +
      `absolute times move with load, ratios less). Took ${(Number(process.hrtime.bigint() - start) / 1e9).toFixed(0)} s.`,
    '',
    WORKLOADS,
    '',
    tables.join('\n\n'),
  ].join('\n');
  writeResultsSection(resultsPath, 'interest-scope', text);
  console.log(text);
  console.error(`wrote ${resultsPath}`);
  return text;
}
