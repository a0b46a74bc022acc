/**
 * `node bench/interest-scope.ts [--clusters 50] [--services 200] [--endpoints 5] [--nodes 10] [--homes 5]
 * [--call-share 10] [--changes 20]`: what interest-scoped outputs (DESIGN §17) save, in process, against
 * unscoped outputs of the same translation.
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
 * of the translation and of the scoping. Prints a Markdown section.
 */
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
import { TIER_S, clusterName, generateWorkload, serviceName, type WorkloadShape } from './workload.ts';

const { values } = parseArgs({
  options: {
    clusters: { type: 'string', default: '50' },
    services: { type: 'string', default: '200' },
    endpoints: { type: 'string', default: '5' },
    nodes: { type: 'string', default: '10' },
    homes: { type: 'string', default: '5' },
    'call-share': { type: 'string', default: '10' },
    changes: { type: 'string', default: '20' },
  },
});
const num = (flag: string, raw: string, min: number): number => {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `--${flag}: "${raw}" is not a whole number ≥ ${min}`);
  return n;
};
const shape: WorkloadShape = {
  ...TIER_S,
  clusters: num('clusters', values.clusters, 2),
  servicesPerCluster: num('services', values.services, 10),
  endpointsPerService: num('endpoints', values.endpoints, 1),
  nodesPerCluster: num('nodes', values.nodes, 1),
};
const homes = Math.min(num('homes', values.homes, 1), shape.clusters);
const callShare = num('call-share', values['call-share'], 1);
const changes = num('changes', values.changes, 1);
const exported = Array.from({ length: shape.servicesPerCluster }, (_, s) => s).filter(
  (s) => s % shape.exportEvery === 0,
);

/** The clusters running exported service `s`: `homes` of them, spread by the service's ordinal. */
function homesOf(s: number): number[] {
  const k = s / shape.exportEvery;
  return Array.from({ length: homes }, (_, i) => (k * homes + i) % shape.clusters);
}

/** The service a workload resource belongs to (Service, EndpointSlice, Pod), if any. */
function serviceOf(r: Resource): string | undefined {
  if (r.kind === KINDS.EndpointSlice.kind) return r.metadata.labels?.['kubernetes.io/service-name'];
  if (r.kind === KINDS.Service.kind || r.kind === KINDS.Pod.kind) return r.metadata.labels?.['app'];
  return undefined;
}

function homedInputs(): Map<string, InputSnapshot> {
  const away = new Map<string, Set<number>>(exported.map((s) => [serviceName(s), new Set<number>()]));
  for (const s of exported) {
    const home = new Set(homesOf(s));
    for (let c = 0; c < shape.clusters; c++) if (!home.has(c)) away.get(serviceName(s))?.add(c);
  }
  const out = new Map<string, InputSnapshot>();
  for (const [cluster, input] of generateWorkload(shape).inputs) {
    const c = Number(cluster.slice(cluster.lastIndexOf('-') + 1));
    const resources = input.resources.filter((r) => {
      const service = serviceOf(r);
      return service === undefined || !(away.get(service)?.has(c) ?? false);
    });
    out.set(cluster, buildInputSnapshot({ cluster, epoch: input.epoch, generation: 1, resources }));
  }
  return out;
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

const inputs = homedInputs();
const clusters = [...inputs.keys()].map((name) => ({ name }));
const vips = allocateVips(new Map(), virtualDestinationKeys(inputs), DEFAULT_VIP_CIDR);
const engine = new IncrementalTranslator(createIstioValidator());
const cold = await cpuOf(() => engine.run({ inputs, clusters, vips }));
const scoper = new OutputScoper();
/** Each cluster's held hosts: `callShare` % of the exported services' hosts, spread by cluster. */
const held = new Map(
  clusters.map((c, i) => [
    c.name,
    new Set(
      exported.filter((_, k) => (k + i) % Math.round(100 / callShare) === 0).map((s) => `${serviceName(s)}.global`),
    ),
  ]),
);
const scopeAll = (outputs: ReadonlyMap<string, OutputSnapshot>) =>
  new Map([...outputs].map(([name, o]) => [name, scoper.scope(o, held.get(name) ?? new Set()).output]));
let unscoped = cold.value.outputs;
let scoped = scopeAll(unscoped);
const sum = (m: ReadonlyMap<string, OutputSnapshot>) => [...m.values()].reduce((n, o) => n + o.bytes, 0);
const sizes = { unscoped: sum(unscoped) / unscoped.size, scoped: sum(scoped) / scoped.size };

const totals = { unscopedClusters: 0, scopedClusters: 0, unscopedBytes: 0, scopedBytes: 0, engineMs: 0, scopeMs: 0 };
let current = inputs;
for (let i = 0; i < changes; i++) {
  const s = exported[i % exported.length] as number;
  const cluster = clusterName(homesOf(s)[0] as number);
  const before = current.get(cluster) as InputSnapshot;
  current = new Map(current).set(
    cluster,
    buildInputSnapshot({
      cluster,
      epoch: before.epoch,
      generation: before.generation + 1,
      resources: flipFirstEndpoint(before.resources, serviceName(s)),
    }),
  );
  const run = await cpuOf(() => engine.run({ inputs: current, clusters, vips }));
  const next = run.value.outputs;
  const nextScoped = await cpuOf(() => scopeAll(next));
  totals.engineMs += run.ms;
  totals.scopeMs += nextScoped.ms;
  for (const [name, o] of next) {
    const was = unscoped.get(name) as OutputSnapshot;
    if (was.hash !== o.hash) {
      totals.unscopedClusters += 1;
      totals.unscopedBytes += await deltaBytes(was, o);
    }
    const wasScoped = scoped.get(name) as OutputSnapshot;
    const isScoped = nextScoped.value.get(name) as OutputSnapshot;
    if (wasScoped.hash !== isScoped.hash) {
      totals.scopedClusters += 1;
      totals.scopedBytes += await deltaBytes(wasScoped, isScoped);
    }
  }
  unscoped = next;
  scoped = nextScoped.value;
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const per = (n: number) => n / changes;
const perAgent = (n: number) => n / changes / shape.clusters;
console.log(
  [
    `### Interest-scoped outputs (${shape.clusters} clusters × ${shape.servicesPerCluster} services × ${shape.endpointsPerService} endpoints, ${exported.length} VirtualDestinations each run in ${homes} clusters, each cluster calling ${callShare} % of them; ${changes} readiness changes)`,
    '',
    `Cold translation: ${Math.round(cold.ms)} ms CPU.`,
    '',
    '| | unscoped | scoped | scoped / unscoped |',
    '|---|---:|---:|---:|',
    `| output per cluster (canonical bytes, mean) | ${kib(sizes.unscoped)} | ${kib(sizes.scoped)} | ${(sizes.scoped / sizes.unscoped).toFixed(2)} |`,
    `| clusters sent an output per change | ${per(totals.unscopedClusters).toFixed(1)} | ${per(totals.scopedClusters).toFixed(1)} | ${(totals.scopedClusters / Math.max(1, totals.unscopedClusters)).toFixed(2)} |`,
    `| bytes per agent per change (delta on the wire, mean over all agents) | ${kib(perAgent(totals.unscopedBytes))} | ${kib(perAgent(totals.scopedBytes))} | ${(totals.scopedBytes / Math.max(1, totals.unscopedBytes)).toFixed(2)} |`,
    `| server CPU per change: translation (ms) | ${per(totals.engineMs).toFixed(1)} | ${per(totals.engineMs).toFixed(1)} | 1.00 |`,
    `| server CPU per change: scoping (ms) | 0 | ${per(totals.scopeMs).toFixed(1)} | — |`,
  ].join('\n'),
);
