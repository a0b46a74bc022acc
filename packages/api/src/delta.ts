import { canonicalJson, deepFreeze } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import type { relay } from './gen/relay.js';
import { compareResources, resourceId, type Resource } from './resource.ts';
import { sha256Hex, snapshotEncoding } from './snapshot.ts';
import type { AssembledSnapshot, AssemblyLimits, FrameInput } from './wire.ts';

/**
 * The change from one snapshot to the next, in whole resources: every resource
 * that is new or whose canonical encoding changed, and the keys (resourceId) of
 * every resource that is gone. Resources that did not change are not in it.
 */
export interface ResourceDelta {
  readonly upserts: readonly Resource[];
  readonly deletedKeys: readonly string[];
}

/** What a receiver must hold, and must end up with, to take a delta. */
export interface DeltaHeader {
  readonly baseHash: string;
  /** sha256 of the upserts' canonical encoding (the chunks' payload). */
  readonly payloadHash: string;
  readonly deletedKeys: readonly string[];
}

/** A snapshot as a sender or receiver holds it: its hash and its resources. */
export interface HeldResources {
  readonly hash: string;
  readonly resources: readonly Resource[];
}

export function computeDelta(base: readonly Resource[], next: readonly Resource[]): ResourceDelta {
  const before = new Map(base.map((r) => [resourceId(r), r] as const));
  const upserts: Resource[] = [];
  for (const r of next) {
    const id = resourceId(r);
    const old = before.get(id);
    before.delete(id);
    if (old === undefined || (old !== r && canonicalJson(old) !== canonicalJson(r))) upserts.push(r);
  }
  return { upserts, deletedKeys: [...before.keys()].sort() };
}

/** The base with the delta applied: sorted, frozen, with its canonical encoding and hash. */
export function applyDelta(base: readonly Resource[], delta: ResourceDelta): { resources: readonly Resource[]; encoding: string; hash: string } {
  const byId = new Map(base.map((r) => [resourceId(r), r] as const));
  for (const key of delta.deletedKeys) byId.delete(key);
  for (const r of delta.upserts) byId.set(resourceId(r), deepFreeze(r));
  const resources = [...byId.values()].sort(compareResources);
  const encoding = canonicalJson(resources);
  return { resources, encoding, hash: sha256Hex(encoding) };
}

/**
 * The frame input that takes a receiver holding `base` to `next`: a delta when
 * that is smaller than `next` sent full, else `next` full. Sending nothing when
 * the hashes are equal is the caller's job (it never gets here then).
 */
export function framesFor(
  base: HeldResources | undefined,
  next: HeldResources & Omit<FrameInput, 'hash' | 'encoding' | 'delta'>,
): FrameInput & { readonly kind: 'full' | 'delta' } {
  const { hash, resources, ...rest } = next;
  const encoding = snapshotEncoding(next);
  const full = { ...rest, hash, encoding, kind: 'full' as const };
  if (!base || base.hash === hash) return full;
  const delta = computeDelta(base.resources, resources);
  const payload = canonicalJson(delta.upserts);
  if (deltaBytes(payload, delta.deletedKeys) >= Buffer.byteLength(encoding)) return full;
  return { ...rest, hash, encoding: payload, delta: { baseHash: base.hash, payloadHash: sha256Hex(payload), deletedKeys: delta.deletedKeys }, kind: 'delta' };
}

/** What a delta costs against the snapshot size limit: its payload plus its deleted keys. */
export function deltaBytes(payload: string, deletedKeys: readonly string[]): number {
  return Buffer.byteLength(payload) + deletedKeys.reduce((n, k) => n + Buffer.byteLength(k), 0);
}

/** The delta a header announces, or undefined for a full snapshot. */
export function deltaOfHeader(header: relay.v1.ISnapshotHeader): DeltaHeader | undefined {
  if (!header.baseHash) return undefined;
  return { baseHash: header.baseHash, payloadHash: header.payloadHash ?? '', deletedKeys: [...(header.deletedKeys ?? [])] };
}

/**
 * Turns an assembled snapshot into the full one it stands for. A full snapshot
 * is returned as is. A delta is applied to `held`; it is refused with
 * MESHRELAY_ERR_DELTA_BASE_MISMATCH when `held` is not its base or the result
 * does not hash to the announced result (the sender then sends it full), and
 * with MESHRELAY_ERR_SNAPSHOT_TOO_LARGE when the result is over the limits.
 */
export function resolveDelta(assembled: AssembledSnapshot, held: HeldResources | undefined, limits: AssemblyLimits): AssembledSnapshot {
  const delta = assembled.delta;
  if (!delta) return assembled;
  if (!held || held.hash !== delta.baseHash) {
    throw new MeshrelayError('MESHRELAY_ERR_DELTA_BASE_MISMATCH', `delta is based on ${delta.baseHash}, but the snapshot held is ${held?.hash || 'none'}`);
  }
  const result = applyDelta(held.resources, { upserts: assembled.resources, deletedKeys: delta.deletedKeys });
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
