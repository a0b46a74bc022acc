/**
 * `node bench/delta-bytes.ts`: bytes per agent for a one-endpoint change at tier S, sent full
 * against sent as a delta, both ways. The change: the first endpoint of svc-000's EndpointSlice
 * in cluster-0 becomes unready (svc-000 is exported, so other clusters' outputs see it too).
 * Push: cluster-0's input snapshot. Pull: every output the change altered, per agent.
 * Bytes are what travels: the encoded SnapshotHeader plus the chunks' payload (gzip above
 * 64 KiB for full snapshots, above 1 KiB for deltas, as the relay sends), counted as relay_snapshot_bytes_total counts them.
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
  type HeldResources,
  type Resource,
} from '@meshrelay/api';
import { DEFAULT_VIP_CIDR, allocateVips, createIstioValidator, translate, virtualDestinationKeys } from '@meshrelay/translator';
import { tierS } from './workload.ts';

const LIMITS = { maxBytes: 64 * 1024 * 1024, maxResources: 1_000_000 };

interface Transfer {
  readonly kind: 'full' | 'delta';
  readonly bytes: number;
  /** The canonical payload before compression. */
  readonly raw: number;
}

/** Frames `next` for a receiver holding `base`, takes it in as the receiver would, and checks the result. */
async function transfer(base: HeldResources | undefined, next: HeldResources): Promise<Transfer> {
  const frames = await encodeSnapshotFor(base, next);
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  const out = await resolveDelta(await assembler.finish(), base, LIMITS);
  if (out.hash !== next.hash || snapshotEncoding(out) !== snapshotEncoding(next)) {
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `a ${frames.kind} transfer did not reproduce snapshot ${next.hash}`);
  }
  return { kind: frames.kind, bytes: frames.wireBytes, raw: Number(frames.header.totalBytes ?? 0) };
}

/** The resources with the first endpoint of svc-000's EndpointSlice unready. */
function oneEndpointUnready(resources: readonly Resource[]): Resource[] {
  let changed = false;
  const out = resources.map((r) => {
    if (changed || r.kind !== KINDS.EndpointSlice.kind || r.metadata.labels?.['kubernetes.io/service-name'] !== 'svc-000') return r;
    const copy = structuredClone(r) as Resource & { endpoints: Array<{ conditions: Record<string, boolean> }> };
    const first = copy.endpoints[0];
    if (!first || !isRecord(first.conditions)) return r;
    first.conditions = { ready: false, serving: false, terminating: true };
    changed = true;
    return copy;
  });
  if (!changed) throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', 'tier S has no EndpointSlice for svc-000 in cluster-0');
  return out;
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
/** Bytes on the wire, with the canonical payload before compression. */
const sized = (t: Transfer) => `${kib(t.bytes)} (${kib(t.raw)} raw)`;

/** The Markdown section: push and per-agent pull bytes, full against delta. */
export async function deltaBytesSection(): Promise<string> {
  const workload = tierS();
  const validator = createIstioValidator();
  const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  const before = translate({ inputs: workload.inputs, clusters: workload.clusters, vips }, validator);

  const oldInput = workload.inputs.get('cluster-0');
  if (!oldInput) throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', 'tier S has no cluster-0');
  const newInput = buildInputSnapshot({ cluster: 'cluster-0', epoch: oldInput.epoch, generation: oldInput.generation + 1, resources: oneEndpointUnready(oldInput.resources) });
  const pushFull = await transfer(undefined, newInput);
  const pushDelta = await transfer(oldInput, newInput);

  const inputs = new Map(workload.inputs).set('cluster-0', newInput);
  const after = translate({ inputs, clusters: workload.clusters, vips }, validator);
  const rows: string[] = [];
  let fullTotal = 0;
  let deltaTotal = 0;
  for (const [cluster, output] of after.outputs) {
    const old = before.outputs.get(cluster);
    if (!old || old.hash === output.hash) continue;
    const full = await transfer(undefined, output);
    const delta = await transfer(old, output);
    fullTotal += full.bytes;
    deltaTotal += delta.bytes;
    rows.push(`| ${cluster} | ${output.resources.length} | ${sized(full)} | ${delta.kind === 'delta' ? sized(delta) : `${sized(delta)}, sent full`} | ${(full.bytes / delta.bytes).toFixed(1)}× |`);
  }
  const unchanged = after.outputs.size - rows.length;
  return [
    '## Bytes per agent for a one-endpoint change (tier S)',
    '',
    'One endpoint of svc-000 (exported) in cluster-0 becomes unready. Bytes are the encoded snapshot header plus its chunks (gzip above 64 KiB for full snapshots, above 1 KiB for deltas; a delta is sent only when smaller), as `relay_snapshot_bytes_total` counts them; every delta was applied to its base and checked against the full snapshot.',
    '',
    '| direction | snapshot | full | delta | ratio |',
    '| --- | --- | --- | --- | --- |',
    `| push (cluster-0 → server) | ${newInput.resources.length} resources | ${sized(pushFull)} | ${sized(pushDelta)} | ${(pushFull.bytes / pushDelta.bytes).toFixed(1)}× |`,
    '',
    `Pull: ${rows.length} of ${after.outputs.size} outputs changed (the other ${unchanged} agents get nothing, delta or not).`,
    '',
    '| agent | output resources | full | delta | ratio |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
    `| all changed | | ${kib(fullTotal)} | ${kib(deltaTotal)} | ${deltaTotal > 0 ? (fullTotal / deltaTotal).toFixed(1) : '–'}× |`,
  ].join('\n');
}

// Run directly, it prints the section; bench/run.ts also adds it to bench/RESULTS.md.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) console.log(await deltaBytesSection());
