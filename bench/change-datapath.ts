/**
 * The server's per-change data path, in process, without translation: what one endpoint change in
 * one cluster costs between the relay stream and Redis. Pieces timed per change (medians and max
 * over the changes):
 *   - resolve: applying the agent's delta to the held input (resolveDelta);
 *   - intake: validation, canonical copy and hash (InputIntake.accept, which also writes the input
 *     to Redis through the store); inputPut: that Redis write alone, measured once more;
 *   - contributions: keeping the changed input as the cluster's carried contribution (DESIGN §13);
 *   - output put: writing an output in which one ServiceEntry changed to Redis;
 *   - output send: framing that output for an agent that holds the previous one.
 * Also the heap after the cold load (after a full GC), which the encodings kept with snapshots add to.
 *
 * Usage: node --expose-gc bench/change-datapath.ts [--clusters 20] [--services 500] [--endpoints 10] [--changes 20]
 * Needs redis-server on PATH (or /usr/bin). Prints one JSON object.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import {
  KINDS,
  buildOutputSnapshot,
  computeDelta,
  encodeSnapshotFor,
  resolveDelta,
  type AssembledSnapshot,
  type InputSnapshot,
  type OutputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { DirectoryDocumentStore, type ClusterRegistry } from '@meshrelay/registry';
import { createRedisSnapshotStore, type SnapshotStore } from '@meshrelay/store';
import { startRedisServer } from '@meshrelay/testkit';
import {
  DEFAULT_VIP_CIDR,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { CarriedContributions } from '../packages/mgmt-server/src/carried-contributions.ts';
import { InputIntake } from '../packages/mgmt-server/src/input-intake.ts';
import { applyEndpointChange, endpointChange } from './tier/endpoint-change.ts';
import { TIER_S, generateWorkload, type WorkloadShape } from './workload.ts';

const { values } = parseArgs({
  options: {
    clusters: { type: 'string', default: '20' },
    services: { type: 'string', default: '500' },
    endpoints: { type: 'string', default: '10' },
    changes: { type: 'string', default: '20' },
  },
});
const shape: WorkloadShape = {
  ...TIER_S,
  clusters: Number(values.clusters),
  servicesPerCluster: Number(values.services),
  endpointsPerService: Number(values.endpoints),
  nodesPerCluster: Math.max(3, Math.ceil((Number(values.services) * Number(values.endpoints)) / 200)),
};
const changes = Number(values.changes);
const logger = pino({ level: 'warn' });
const LIMITS = { maxBytes: 256 * 1024 * 1024, maxResources: 1_000_000 };

/** Intake only marks clusters warm; the bench has no registry to keep. */
const registry = { setCondition: () => Promise.resolve() } as unknown as ClusterRegistry;

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

async function timed<T>(samples: number[], work: () => Promise<T>): Promise<T> {
  const start = process.hrtime.bigint();
  const out = await work();
  samples.push(ms(start));
  return out;
}

function summary(samples: readonly number[]): { p50: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: Number((sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(1)),
    max: Number((sorted.at(-1) ?? 0).toFixed(1)),
  };
}

function heapMiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Number((process.memoryUsage().heapUsed / 1048576).toFixed(0));
}

/** The agent's next push as the server assembles it: a delta from `held` to `next`. */
async function assembledDelta(
  held: InputSnapshot,
  resources: readonly Resource[],
  generation: number,
): Promise<AssembledSnapshot> {
  const delta = await computeDelta(held.resources, resources);
  const upserts = delta.upserts.map((r) => JSON.parse(JSON.stringify(r)) as Resource);
  const next = {
    epoch: held.epoch,
    generation,
    hash: '',
    resources: upserts,
    provenance: [],
    delta: { baseHash: held.hash, payloadHash: '', deletedKeys: [...delta.deletedKeys] },
  };
  // The announced result hash is what the agent computed over its full snapshot.
  const full = buildOutputSnapshot({ cluster: held.cluster, resources, provenance: [] });
  return { ...next, hash: full.hash };
}

/**
 * `output` with the endpoints of its first ServiceEntry moved to a new address, as a translation after the change
 * gives.
 */
function changedOutput(output: OutputSnapshot, n: number): OutputSnapshot {
  const at = output.resources.findIndex((r) => r.kind === KINDS.ServiceEntry.kind);
  const entry = structuredClone(output.resources[at]) as Resource & { spec: { endpoints: Array<{ address: string }> } };
  const first = entry.spec.endpoints[0];
  if (first) first.address = `10.98.${Math.floor(n / 250)}.${(n % 250) + 1}`;
  const resources = [...output.resources];
  resources[at] = entry;
  return buildOutputSnapshot({ cluster: output.cluster, resources, provenance: output.provenance });
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-datapath-'));
  const store: SnapshotStore = createRedisSnapshotStore({ url: redis.url, replicaId: 'bench', logger });
  const contributions = new CarriedContributions(new DirectoryDocumentStore(dir), logger);
  try {
    const heapBefore = heapMiB();
    const workload = generateWorkload(shape);
    const intake = new InputIntake(store, registry, logger);
    const coldStart = process.hrtime.bigint();
    for (const input of workload.inputs.values())
      await intake.accept(input.cluster, {
        epoch: input.epoch,
        generation: 1,
        hash: input.hash,
        resources: input.resources.map((r) => JSON.parse(JSON.stringify(r)) as Resource),
        provenance: [],
      });
    const coldIntakeMs = ms(coldStart);
    const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
    const translated = translate(
      { inputs: store.memoryInputs(), clusters: workload.clusters, vips },
      createIstioValidator(),
    );
    let output = translated.outputs.get(workload.clusters[0]?.name ?? '') as OutputSnapshot;
    for (const o of translated.outputs.values()) await store.putOutput(o);
    await contributions.remember(store.memoryInputs().values());
    const heapAfterCold = heapMiB();
    const rssAfterCold = Math.round(process.memoryUsage().rss / 1048576);

    const samples = {
      resolve: [] as number[],
      intake: [] as number[],
      inputPut: [] as number[],
      contributions: [] as number[],
      outputPut: [] as number[],
      outputSend: [] as number[],
    };
    const sendBytes: number[] = [];
    for (let i = 0; i < changes; i++) {
      const change = endpointChange(shape, i);
      const held = store.memoryInputs().get(change.cluster) as InputSnapshot;
      const assembled = await assembledDelta(held, applyEndpointChange(held.resources, change), held.generation + 1);
      const resolved = await timed(samples.resolve, () => resolveDelta(assembled, held, LIMITS));
      const { snapshot } = await timed(samples.intake, () => intake.accept(change.cluster, resolved));
      // The Redis write alone (intake above includes one): the same content under the next generation.
      await timed(samples.inputPut, () => store.putInput({ ...snapshot, generation: snapshot.generation + 1 }));
      await timed(samples.contributions, () =>
        contributions.remember([store.memoryInputs().get(change.cluster) as InputSnapshot]),
      );
      const next = changedOutput(output, i);
      await timed(samples.outputPut, () => store.putOutput(next));
      const frames = await timed(samples.outputSend, () => encodeSnapshotFor(output, next));
      sendBytes.push(frames.wireBytes);
      output = next;
    }
    const inputBytes = [...store.memoryInputs().values()].reduce((n, s) => n + s.bytes, 0) / workload.clusters.length;
    console.log(
      JSON.stringify(
        {
          shape: {
            clusters: shape.clusters,
            services: shape.servicesPerCluster,
            endpoints: shape.endpointsPerService,
            changes,
          },
          inputResourcesPerCluster: workload.counts.inputResources / workload.clusters.length,
          inputMiBPerCluster: Number((inputBytes / 1048576).toFixed(2)),
          outputMiB: Number((output.bytes / 1048576).toFixed(2)),
          coldIntakeMs: Math.round(coldIntakeMs),
          heapMiB: { before: heapBefore, afterCold: heapAfterCold, afterChanges: heapMiB() },
          rssMiBAfterCold: rssAfterCold,
          perChangeMs: {
            resolveDelta: summary(samples.resolve),
            intake: summary(samples.intake),
            inputPut: summary(samples.inputPut),
            contributions: summary(samples.contributions),
            outputPut: summary(samples.outputPut),
            outputSend: summary(samples.outputSend),
          },
          sendWireBytes: summary(sendBytes),
        },
        null,
        2,
      ),
    );
  } finally {
    contributions.stop();
    await store.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
