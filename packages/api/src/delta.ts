import { canonicalJson, deepFreeze } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { deltaBytes } from './delta-header.ts';
import { LoopSlicer } from './loop-slicer.ts';
import { compareResources, resourceId, type Resource } from './resource.ts';
import { sha256Hex } from './snapshot.ts';
import { encodeSnapshotFrames, snapshotWireBytes, type AssembledSnapshot, type AssemblyLimits, type FrameInput, type FrameOptions, type SnapshotFrames } from './wire.ts';

/**
 * The change from one snapshot to the next, in whole resources: every resource
 * that is new or whose canonical encoding changed, and the keys (resourceId) of
 * every resource that is gone. Resources that did not change are not in it.
 */
export interface ResourceDelta {
  readonly upserts: readonly Resource[];
  readonly deletedKeys: readonly string[];
}

/** A snapshot as a sender or receiver holds it: its hash and its resources. */
export interface HeldResources {
  readonly hash: string;
  readonly resources: readonly Resource[];
}

/**
 * The canonical encoding of each resource, giving the event loop a turn every
 * ~20 ms (LoopSlicer) so a 16 MiB snapshot does not hold heartbeats up. `[parts.join(',')]`
 * is exactly canonicalJson(resources).
 */
export async function canonicalParts(resources: readonly Resource[], slicer = new LoopSlicer()): Promise<string[]> {
  const parts: string[] = [];
  for (const r of resources) {
    parts.push(canonicalJson(r));
    if (slicer.due()) await slicer.yield();
  }
  return parts;
}

/**
 * `nextParts`, when given, are canonicalParts(next) already computed. A resource that is the
 * same deep-frozen object in base and next is unchanged without encoding either (snapshots share
 * unchanged resources by identity); any other pair is compared by canonical encoding.
 */
export async function computeDelta(base: readonly Resource[], next: readonly Resource[], nextParts?: readonly string[], slicer = new LoopSlicer()): Promise<ResourceDelta> {
  const before = new Map(base.map((r) => [resourceId(r), r] as const));
  const upserts: Resource[] = [];
  for (const [i, r] of next.entries()) {
    const id = resourceId(r);
    const old = before.get(id);
    before.delete(id);
    const same = old !== undefined && ((old === r && Object.isFrozen(r)) || canonicalJson(old) === (nextParts?.[i] ?? canonicalJson(r)));
    if (!same) upserts.push(r);
    if (slicer.due()) await slicer.yield();
  }
  return { upserts, deletedKeys: [...before.keys()].sort() };
}

/** The base with the delta applied: sorted, frozen, with its canonical encoding and hash. */
export async function applyDelta(base: readonly Resource[], delta: ResourceDelta): Promise<{ resources: readonly Resource[]; encoding: string; hash: string }> {
  const byId = new Map(base.map((r) => [resourceId(r), r] as const));
  for (const key of delta.deletedKeys) byId.delete(key);
  for (const r of delta.upserts) byId.set(resourceId(r), deepFreeze(r));
  const resources = [...byId.values()].sort(compareResources);
  const encoding = `[${(await canonicalParts(resources)).join(',')}]`;
  return { resources, encoding, hash: sha256Hex(encoding) };
}

/** Deltas are small, so they are compressed from a much lower size than full snapshots. */
export const DELTA_COMPRESS_ABOVE_BYTES = 1024;

/** The frames that take a receiver holding a base to a snapshot, and which kind they are. */
export interface ChosenFrames extends SnapshotFrames {
  readonly kind: 'full' | 'delta';
  /** Encoded header plus chunk payload: what travels. */
  readonly wireBytes: number;
}

type Target = HeldResources & Omit<FrameInput, 'hash' | 'encoding' | 'delta'>;

/**
 * The delta frame input that takes a receiver holding `base` to `next`, or
 * undefined when there is no base or its canonical encoding is not smaller
 * than `next`'s. `hash` stays `next`'s; the payload is the upserts.
 */
export async function deltaInput(base: HeldResources | undefined, next: Target, fullBytes: number, nextParts?: readonly string[]): Promise<FrameInput | undefined> {
  if (!base || base.hash === next.hash) return undefined;
  const delta = await computeDelta(base.resources, next.resources, nextParts);
  const payload = canonicalJson(delta.upserts);
  if (deltaBytes(payload, delta.deletedKeys) >= fullBytes) return undefined;
  const { hash, resources: _, ...rest } = next;
  return { ...rest, hash, encoding: payload, delta: { baseHash: base.hash, payloadHash: sha256Hex(payload), deletedKeys: delta.deletedKeys } };
}

/**
 * Frames `next` for a receiver holding `base`: as a delta when that is smaller
 * on the wire than `next` sent full (both compared as they travel, after
 * compression), else full. Sending nothing when the receiver already holds
 * `next` is the caller's job.
 */
export async function encodeSnapshotFor(base: HeldResources | undefined, next: Target, options: FrameOptions = {}): Promise<ChosenFrames> {
  const { hash, resources: _, ...rest } = next;
  const slicer = new LoopSlicer();
  const parts = await canonicalParts(next.resources, slicer);
  const encoding = await utf8ArrayInSlices(parts, slicer);
  const full = chosen('full', await encodeSnapshotFrames({ ...rest, hash, encoding }, options));
  const input = await deltaInput(base, next, encoding.length, parts);
  if (!input) return full;
  const delta = chosen('delta', await encodeSnapshotFrames(input, { ...options, compressAboveBytes: Math.min(options.compressAboveBytes ?? DELTA_COMPRESS_ABOVE_BYTES, DELTA_COMPRESS_ABOVE_BYTES) }));
  return delta.wireBytes < full.wireBytes ? delta : full;
}

/** The UTF-8 bytes of `[${parts.join(',')}]`, a part at a time (one 16 MiB join and encode would hold the loop). */
async function utf8ArrayInSlices(parts: readonly string[], slicer: LoopSlicer): Promise<Buffer> {
  const pieces: Buffer[] = [Buffer.from('[')];
  for (let i = 0; i < parts.length; i++) {
    pieces.push(Buffer.from(i === 0 ? (parts[i] as string) : `,${parts[i] as string}`, 'utf8'));
    if (slicer.due()) await slicer.yield();
  }
  pieces.push(Buffer.from(']'));
  return Buffer.concat(pieces);
}

function chosen(kind: 'full' | 'delta', frames: SnapshotFrames): ChosenFrames {
  return { ...frames, kind, wireBytes: snapshotWireBytes(frames.header, frames.chunks.reduce((n, c) => n + (c.data?.length ?? 0), 0)) };
}

/**
 * Turns an assembled snapshot into the full one it stands for. A full snapshot
 * is returned as is. A delta is applied to `held`; it is refused with
 * MESHRELAY_ERR_DELTA_BASE_MISMATCH when `held` is not its base or the result
 * does not hash to the announced result (the sender then sends it full), and
 * with MESHRELAY_ERR_SNAPSHOT_TOO_LARGE when the result is over the limits.
 */
export async function resolveDelta(assembled: AssembledSnapshot, held: HeldResources | undefined, limits: AssemblyLimits): Promise<AssembledSnapshot> {
  const delta = assembled.delta;
  if (!delta) return assembled;
  if (!held || held.hash !== delta.baseHash) {
    throw new MeshrelayError('MESHRELAY_ERR_DELTA_BASE_MISMATCH', `delta is based on ${delta.baseHash}, but the snapshot held is ${held?.hash || 'none'}`);
  }
  const result = await applyDelta(held.resources, { upserts: assembled.resources, deletedKeys: delta.deletedKeys });
  if (result.resources.length > limits.maxResources) {
    throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE', `snapshot after the delta has ${result.resources.length} resources; the limit is ${limits.maxResources}`);
  }
  const bytes = Buffer.byteLength(result.encoding);
  if (bytes > limits.maxBytes) {
    throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE', `snapshot after the delta is ${bytes} bytes; the limit is ${limits.maxBytes} bytes`);
  }
  if (result.hash !== assembled.hash) {
    throw new MeshrelayError('MESHRELAY_ERR_DELTA_BASE_MISMATCH', `delta applied to ${delta.baseHash} hashes to ${result.hash}, not the announced ${assembled.hash}`);
  }
  const { delta: _, ...rest } = assembled;
  return { ...rest, resources: result.resources };
}
