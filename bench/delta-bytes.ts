/**
 * `node bench/delta-bytes.ts [--wide]`: bytes per agent for a one-endpoint change at tier S (or,
 * with --wide, at 50 clusters × 20 services × 10 endpoints: tier M's ~500-endpoint ServiceEntries
 * and 50-entry provenance lists at a fraction of its size), sent full
 * against sent as a delta, both ways. The change: the first endpoint of svc-000's EndpointSlice
 * in cluster-0 becomes unready (svc-000 is exported, so other clusters' outputs see it too).
 * Push: cluster-0's input snapshot. Pull: every output the change altered, per agent.
 * Bytes are what travels: the encoded SnapshotHeader plus the chunks' payload (gzip above
 * 64 KiB for full snapshots, above 1 KiB for deltas, as the relay sends), counted as relay_snapshot_bytes_total counts
 * them.
 * Prints a Markdown section; exits non-zero if a delta does not reproduce the full snapshot.
 */
import { pathToFileURL } from 'node:url';
import {
  KINDS,
  MeshrelayError,
  buildInputSnapshot,
  encodeSnapshotFor,
  isRecord,
  resolveDelta,
  snapshotEncoding,
  SnapshotAssembler,
  relay,
  type HeldResources,
  type Resource,
} from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { TIER_S, generateWorkload, type WorkloadShape } from './workload.ts';

/** Tier M's fan-in (50 clusters × 10 endpoints per service) with 20 services per cluster. */
export const WIDE: WorkloadShape = Object.freeze({
  ...TIER_S,
  clusters: 50,
  servicesPerCluster: 20,
  endpointsPerService: 10,
  nodesPerCluster: 5,
});

const LIMITS = { maxBytes: 64 * 1024 * 1024, maxResources: 1_000_000 };

interface Transfer {
  readonly kind: 'full' | 'delta';
  readonly bytes: number;
  /** The canonical payload before compression. */
  readonly raw: number;
  /** The encoded header alone. */
  readonly header: number;
}

/** Frames `next` for a receiver holding `base`, takes it in as the receiver would, and checks the result. */
async function transfer(base: HeldResources | undefined, next: HeldResources, patches = false): Promise<Transfer> {
  const frames = await encodeSnapshotFor(base, next, { patches });
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  const out = await resolveDelta(await assembler.finish(), base, LIMITS);
  if (out.hash !== next.hash || snapshotEncoding(out) !== snapshotEncoding(next)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INTERNAL',
      `a ${frames.kind} transfer did not reproduce snapshot ${next.hash}`,
    );
  }
  return {
    kind: frames.kind,
    bytes: frames.wireBytes,
    raw: Number(frames.header.totalBytes ?? 0),
    header: relay.v1.SnapshotHeader.encode(frames.header).finish().length,
  };
}

/** The resources with the first endpoint of svc-000's EndpointSlice unready. */
function oneEndpointUnready(resources: readonly Resource[]): Resource[] {
  let changed = false;
  const out = resources.map((r) => {
    if (
      changed ||
      r.kind !== KINDS.EndpointSlice.kind ||
      r.metadata.labels?.['kubernetes.io/service-name'] !== 'svc-000'
    )
      return r;
    const copy = structuredClone(r) as Resource & { endpoints: Array<{ conditions: Record<string, boolean> }> };
    const first = copy.endpoints[0];
    if (!first || !isRecord(first.conditions)) return r;
    first.conditions = { ready: false, serving: false, terminating: true };
    changed = true;
    return copy;
  });
  if (!changed)
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', 'the workload has no EndpointSlice for svc-000 in cluster-0');
  return out;
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
/** Bytes on the wire, with the canonical payload before compression. */
const sized = (t: Transfer) => `${t.bytes} B (header ${t.header} B; payload ${t.raw} B raw)`;
const labelled = (t: Transfer) => (t.kind === 'delta' ? sized(t) : `${sized(t)}, sent full`);

/** The Markdown section: push and per-agent pull bytes, full against delta. */
export async function deltaBytesSection(shape: WorkloadShape = TIER_S): Promise<string> {
  const workload = generateWorkload(shape);
  const tier =
    shape === TIER_S
      ? 'tier S'
      : `${shape.clusters} clusters × ${shape.servicesPerCluster} services × ${shape.endpointsPerService} endpoints`;
  const validator = createIstioValidator();
  const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  const before = translate({ inputs: workload.inputs, clusters: workload.clusters, vips }, validator);

  const oldInput = workload.inputs.get('cluster-0');
  if (!oldInput) throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', 'the workload has no cluster-0');
  const newInput = buildInputSnapshot({
    cluster: 'cluster-0',
    epoch: oldInput.epoch,
    generation: oldInput.generation + 1,
    resources: oneEndpointUnready(oldInput.resources),
  });
  const pushFull = await transfer(undefined, newInput);
  const pushDelta = await transfer(oldInput, newInput);
  const pushPatch = await transfer(oldInput, newInput, true);

  const inputs = new Map(workload.inputs).set('cluster-0', newInput);
  const after = translate({ inputs, clusters: workload.clusters, vips }, validator);
  const rows: string[] = [];
  const totals = { full: 0, delta: 0, patch: 0 };
  for (const [cluster, output] of after.outputs) {
    const old = before.outputs.get(cluster);
    if (!old || old.hash === output.hash) continue;
    const full = await transfer(undefined, output);
    const delta = await transfer(old, output);
    const patch = await transfer(old, output, true);
    totals.full += full.bytes;
    totals.delta += delta.bytes;
    totals.patch += patch.bytes;
    rows.push(
      `| ${cluster} | ${output.resources.length} | ${sized(full)} | ${labelled(delta)} | ${labelled(patch)} | ${(full.bytes / patch.bytes).toFixed(1)}× |`,
    );
  }
  const unchanged = after.outputs.size - rows.length;
  return [
    `## Bytes per agent for a one-endpoint change (${tier})`,
    '',
    'One endpoint of svc-000 (exported) in cluster-0 becomes unready. Bytes are the encoded snapshot header plus its chunks (gzip above 64 KiB for full snapshots, above 1 KiB for deltas; a delta is sent only when smaller), as `relay_snapshot_bytes_total` counts them; every delta was applied to its base and checked against the full snapshot. "Whole-resource delta" is what a receiver that does not take patches gets (changed resources whole, provenance whole); "patch delta" what one that does gets (RFC 6902 patches, provenance relative to the base\'s).',
    '',
    '| direction | snapshot | full | whole-resource delta | patch delta | ratio full/patch |',
    '| --- | --- | --- | --- | --- | --- |',
    `| push (cluster-0 → server) | ${newInput.resources.length} resources | ${sized(pushFull)} | ${labelled(pushDelta)} | ${labelled(pushPatch)} | ${(pushFull.bytes / pushPatch.bytes).toFixed(1)}× |`,
    '',
    `Pull: ${rows.length} of ${after.outputs.size} outputs changed (the other ${unchanged} agents get nothing, delta or not).`,
    '',
    '| agent | output resources | full | whole-resource delta | patch delta | ratio full/patch |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    `| all changed | | ${kib(totals.full)} | ${kib(totals.delta)} | ${kib(totals.patch)} | ${totals.patch > 0 ? (totals.full / totals.patch).toFixed(1) : '–'}× |`,
  ].join('\n');
}

// Run directly, it prints the section; bench/run.ts also adds it to bench/RESULTS.md.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href)
  console.log(await deltaBytesSection(process.argv.includes('--wide') ? WIDE : TIER_S));
