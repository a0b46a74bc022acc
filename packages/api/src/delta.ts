import { canonicalJson, deepFreeze, keptEncoding } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { deltaBytes, type DeltaHeader } from './delta-header.ts';
import { LoopSlicer } from './loop-slicer.ts';
import { applyProvenanceChange, provenanceChange } from './provenance-delta.ts';
import { compareResources, resourceId, type Resource } from './resource.ts';
import { DEFAULT_PATCH_LIMITS, PatchBudget, type PatchLimits } from './patch-budget.ts';
import { applyResourcePatch, resourcePatch, type ResourcePatch } from './resource-patch.ts';
import { digestResourceListInSlices } from './resumable-digest.ts';
import { isCanonicalResource, resourceEncoding, sha256Hex, type Provenance } from './snapshot.ts';
import {
  DEFAULT_COMPRESS_ABOVE_BYTES,
  encodeSnapshotFrames,
  snapshotHeader,
  snapshotWireBytes,
  type AssembledSnapshot,
  type AssemblyLimits,
  type FrameInput,
  type FrameOptions,
  type SnapshotFrames,
} from './wire.ts';

/**
 * The change from one snapshot to the next, in whole resources: every resource
 * that is new or whose canonical encoding changed, and the keys (resourceId) of
 * every resource that is gone. Resources that did not change are not in it.
 */
export interface ResourceDelta {
  readonly upserts: readonly Resource[];
  readonly deletedKeys: readonly string[];
  /** Resources of the base changed in place, applied before the upserts. */
  readonly patches?: readonly ResourcePatch[];
}

/** A snapshot as a sender or receiver holds it: its hash, its resources and (outputs) its provenance. */
export interface HeldResources {
  readonly hash: string;
  readonly resources: readonly Resource[];
  readonly provenance?: readonly Provenance[];
  /** The canonical size of `resources`, when known: bounds what a delta's patches may add. */
  readonly bytes?: number;
}

/**
 * The canonical encoding of each resource, giving the event loop a turn every
 * ~20 ms (LoopSlicer) so a 16 MiB snapshot does not hold heartbeats up. `[parts.join(',')]`
 * is exactly canonicalJson(resources).
 */
export async function canonicalParts(resources: readonly Resource[], slicer = new LoopSlicer()): Promise<string[]> {
  const parts: string[] = [];
  for (const r of resources) {
    parts.push(resourceEncoding(r));
    if (slicer.due()) await slicer.yield();
  }
  return parts;
}

/**
 * resourceId of a resource whose identity fields cannot change (it and its metadata are frozen),
 * remembered: the resources of a held snapshot are walked on every delta against it.
 */
const frozenIds = new WeakMap<Resource, string>();

function idOf(r: Resource): string {
  const known = frozenIds.get(r);
  if (known !== undefined) return known;
  const id = resourceId(r);
  if (Object.isFrozen(r) && Object.isFrozen(r.metadata)) frozenIds.set(r, id);
  return id;
}

/**
 * `nextParts`, when given, are canonicalParts(next) already computed. A resource that is the
 * same deep-frozen object in base and next is unchanged without encoding either (snapshots share
 * unchanged resources by identity); any other pair is compared by canonical encoding.
 */
export async function computeDelta(
  base: readonly Resource[],
  next: readonly Resource[],
  nextParts?: readonly string[],
  slicer = new LoopSlicer(),
): Promise<ResourceDelta> {
  const { upserts, deletedKeys } = await diffResources(base, next, nextParts, slicer);
  return { upserts, deletedKeys };
}

/** computeDelta, with each changed resource's version in the base (keyed by the new version). */
async function diffResources(
  base: readonly Resource[],
  next: readonly Resource[],
  nextParts: readonly string[] | undefined,
  slicer: LoopSlicer,
): Promise<ResourceDelta & { readonly replaced: ReadonlyMap<Resource, Resource> }> {
  if (isStrictlySorted(base) && isStrictlySorted(next)) return diffSorted(base, next, nextParts, slicer);
  const before = new Map(base.map((r) => [idOf(r), r] as const));
  const upserts: Resource[] = [];
  // Each changed resource's version in the base, the one a patch would apply to.
  const replaced = new Map<Resource, Resource>();
  for (const [i, r] of next.entries()) {
    const id = idOf(r);
    const old = before.get(id);
    before.delete(id);
    const same = old !== undefined && unchanged(old, r, nextParts?.[i]);
    if (!same) upserts.push(r);
    if (!same && old !== undefined) replaced.set(r, old);
    if (slicer.due()) await slicer.yield();
  }
  return { upserts, deletedKeys: [...before.keys()].sort(), replaced };
}

/**
 * Whether `r` (whose canonical encoding is `encoding` when given) is `old` unchanged: the same deep-frozen object, or
 * the same encoding.
 */
function unchanged(old: Resource, r: Resource, encoding: string | undefined): boolean {
  return (old === r && Object.isFrozen(r)) || resourceEncoding(old) === (encoding ?? resourceEncoding(r));
}

/**
 * diffResources of two strictly sorted lists, walked side by side: a resource that is the base's
 * object at the same place costs one comparison, without its id or encoding (after a small
 * change, all but a few are), so a delta between two 12k-resource snapshots takes well under a
 * millisecond instead of a map of the base's ids.
 */
async function diffSorted(
  base: readonly Resource[],
  next: readonly Resource[],
  nextParts: readonly string[] | undefined,
  slicer: LoopSlicer,
): Promise<ResourceDelta & { readonly replaced: ReadonlyMap<Resource, Resource> }> {
  const upserts: Resource[] = [];
  const replaced = new Map<Resource, Resource>();
  const deleted: string[] = [];
  let b = 0;
  for (let i = 0; i < next.length; i++) {
    const r = next[i] as Resource;
    // Base resources ordered before `r` are not in next.
    while (b < base.length && base[b] !== r && before(base[b] as Resource, r))
      deleted.push(idOf(base[b++] as Resource));
    const old = base[b];
    const sameKey = old !== undefined && (old === r || !before(r, old));
    if (sameKey) b++;
    const same = sameKey && unchanged(old, r, nextParts?.[i]);
    if (!same) upserts.push(r);
    if (!same && sameKey) replaced.set(r, old);
    if (i % 1024 === 1023 && slicer.due()) await slicer.yield();
  }
  while (b < base.length) deleted.push(idOf(base[b++] as Resource));
  return { upserts, deletedKeys: deleted.sort(), replaced };
}

/**
 * Encodings of resources a receiver took in (frozen when remembered), by identity: the resources
 * of a held snapshot are the next delta's base, so each is encoded once, not on every delta.
 * Canonical copies (resourceEncoding keeps theirs) are not in it.
 */
const receivedEncodings = new WeakMap<Resource, string>();

/** The canonical encoding of `r`, remembered for the next delta (and `r` frozen so it stays true). */
function heldEncoding(r: Resource): string {
  // Most resources of a held snapshot are canonical copies: ask for their kept encoding first.
  const kept = keptEncoding(r);
  if (kept !== undefined) return kept;
  const known = receivedEncodings.get(r);
  if (known !== undefined) return known;
  const encoding = resourceEncoding(r);
  if (!isCanonicalResource(r)) receivedEncodings.set(deepFreeze(r), encoding);
  return encoding;
}

/**
 * Takes the resources of a full snapshot a receiver holds as the base of later deltas: each is
 * frozen and its received text remembered as its encoding, so the first delta against it
 * encodes nothing it did not change (encoding a large output is slow; see
 * docs/design/decisions/README.md#delta-base-keeps-received-text).
 * `texts` must be the snapshot's resource texts as received (AssembledSnapshot.texts) of a
 * snapshot whose hash was checked; gives the event loop turns.
 */
export async function rememberReceivedEncodings(
  resources: readonly Resource[],
  texts: readonly string[],
): Promise<void> {
  if (resources.length !== texts.length) return;
  const slicer = new LoopSlicer();
  for (const [i, r] of resources.entries()) {
    if (!receivedEncodings.has(r) && !isCanonicalResource(r)) receivedEncodings.set(deepFreeze(r), texts[i] as string);
    if (slicer.due()) await slicer.yield();
  }
}

/**
 * What applyDelta holds a delta's patches to (see PatchBudget); unset fields are unbounded, or DEFAULT_PATCH_LIMITS.
 */
export interface DeltaLimits {
  readonly patch?: PatchLimits;
  /** The snapshot byte limit: no patched resource, and not the snapshot, may grow past it. */
  readonly maxBytes?: number;
  /** The canonical size of the base, when known: the patches may grow it only up to maxBytes. */
  readonly baseBytes?: number;
}

/** The result of a delta applied to its base: sorted, frozen resources and their canonical encoding's hash and size. */
export interface AppliedDelta {
  readonly resources: readonly Resource[];
  readonly hash: string;
  /** Bytes of the canonical encoding. */
  readonly bytes: number;
  /** False when two resources share a key (their ids collide): the list is not a valid snapshot's. */
  readonly sorted: boolean;
}

/**
 * The base with the delta applied: sorted, frozen, with the hash and size of its canonical
 * encoding. A sorted base (a snapshot's resources are) is walked once and the few changed
 * resources are merged in; any other is sorted whole. A patch whose key the base lacks
 * or that does not apply is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH, one that would pass a
 * limit of `limits` (checked as each operation applies) with MESHRELAY_ERR_DELTA_LIMIT. Each resource's
 * encoding is remembered, so the next delta against the result encodes only what it changes.
 */
export async function applyDelta(
  base: readonly Resource[],
  delta: ResourceDelta,
  limits: DeltaLimits = {},
): Promise<AppliedDelta> {
  const slicer = new LoopSlicer();
  const budget = new PatchBudget(
    limits.patch ?? DEFAULT_PATCH_LIMITS,
    limits.maxBytes ?? Number.MAX_SAFE_INTEGER,
    limits.baseBytes,
  );
  const touched = new Set<string>([
    ...(delta.patches ?? []).map((p) => p.key),
    ...delta.deletedKeys,
    ...delta.upserts.map(idOf),
  ]);
  const at =
    (isStrictlySorted(base) ? positionsBySearch(base, touched, delta.upserts) : undefined) ??
    (await positionsByWalk(base, touched, slicer));
  const replaced = new Map<string, Resource | undefined>();
  for (const patch of delta.patches ?? []) {
    const old = replaced.has(patch.key) ? replaced.get(patch.key) : base[at.get(patch.key) ?? -1];
    if (!old)
      throw new MeshrelayError(
        'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
        `patch of ${patch.key}, which the snapshot held does not have`,
      );
    // With the base snapshot's size known, its growth bounds each resource: none is measured whole.
    replaced.set(
      patch.key,
      await applyResourcePatch(
        old,
        patch,
        budget,
        slicer,
        limits.baseBytes === undefined ? Buffer.byteLength(heldEncoding(old)) : undefined,
      ),
    );
  }
  for (const key of delta.deletedKeys) replaced.set(key, undefined);
  for (const r of delta.upserts) replaced.set(idOf(r), r);
  const merged = mergeChanges(base, at, replaced);
  // A base out of order (a peer's full snapshot is taken as sent) gives a sorted result all the same.
  const sorted = strictlySorted(merged);
  const resources = sorted ? merged : merged.sort(compareResources);
  // Frozen: the digest keeps checkpoints of this list, which the next delta against it resumes from.
  Object.freeze(resources);
  return {
    resources,
    sorted: sorted || strictlySorted(resources),
    ...(await digestResourceListInSlices(resources, heldPieces, base, slicer)),
  };
}

/** Where in `base` each touched key is, found by looking at every resource's id. */
async function positionsByWalk(
  base: readonly Resource[],
  touched: ReadonlySet<string>,
  slicer: LoopSlicer,
): Promise<Map<string, number>> {
  const at = new Map<string, number>();
  for (let i = 0; i < base.length; i++) {
    const id = idOf(base[i] as Resource);
    if (touched.has(id)) at.set(id, i);
    if (i % 1024 === 1023 && slicer.due()) await slicer.yield();
  }
  return at;
}

/**
 * positionsByWalk for a strictly sorted base, by binary search: the upserts are looked for as
 * themselves, the other keys as the key they parse into. A key the base does not hold at the
 * place its parse points to (absent, or a name the parse cannot split back) makes it undefined:
 * the caller then walks, so a key is never missed.
 */
function positionsBySearch(
  base: readonly Resource[],
  touched: ReadonlySet<string>,
  upserts: readonly Resource[],
): Map<string, number> | undefined {
  const probes = new Map<string, Pick<Resource, 'apiVersion' | 'kind' | 'metadata'>>();
  for (const r of upserts) probes.set(idOf(r), r);
  const upserted = new Set(probes.keys());
  for (const key of touched) {
    if (probes.has(key)) continue;
    const probe = parseResourceId(key);
    if (!probe) return undefined;
    probes.set(key, probe);
  }
  const at = new Map<string, number>();
  for (const [key, probe] of probes) {
    const i = lowerBound(base, probe);
    const found = base[i];
    // An upsert of a new key is not in the base, and need not be.
    if (found !== undefined && idOf(found) === key) at.set(key, i);
    else if (!upserted.has(key)) return undefined;
  }
  return at;
}

/** The first index of the sorted `list` whose resource is not ordered before `probe`. */
function lowerBound(list: readonly Resource[], probe: Pick<Resource, 'apiVersion' | 'kind' | 'metadata'>): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(list[mid] as Resource, probe)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The key fields formatResourceKey wrote into `id` ("kind.apiVersion namespace/name"), or undefined when it does not
 * have that form.
 */
function parseResourceId(id: string): Pick<Resource, 'apiVersion' | 'kind' | 'metadata'> | undefined {
  const dot = id.indexOf('.');
  const space = id.indexOf(' ', dot + 1);
  if (dot <= 0 || space <= dot + 1) return undefined;
  const where = id.slice(space + 1);
  const slash = where.indexOf('/');
  const metadata = slash < 0 ? { name: where } : { namespace: where.slice(0, slash), name: where.slice(slash + 1) };
  return { kind: id.slice(0, dot), apiVersion: id.slice(dot + 1, space), metadata };
}

/**
 * `base` with each resource at `at` replaced by its entry in `changes` (undefined = removed) and every other entry
 * inserted in order.
 */
function mergeChanges(
  base: readonly Resource[],
  at: ReadonlyMap<string, number>,
  changes: ReadonlyMap<string, Resource | undefined>,
): Resource[] {
  const inPlace = new Map<number, Resource | undefined>();
  const added: Resource[] = [];
  for (const [id, r] of changes) {
    const i = at.get(id);
    if (i !== undefined) inPlace.set(i, r);
    else if (r) added.push(r);
  }
  const kept: Resource[] = [];
  for (let i = 0; i < base.length; i++) {
    const r = inPlace.has(i) ? inPlace.get(i) : base[i];
    if (r) kept.push(r);
  }
  if (added.length === 0) return kept;
  added.sort(compareResources);
  const out: Resource[] = [];
  let a = 0;
  for (const r of kept) {
    while (a < added.length && compareResources(added[a] as Resource, r) < 0) out.push(added[a++] as Resource);
    out.push(r);
  }
  while (a < added.length) out.push(added[a++] as Resource);
  return out;
}

/** compareResources(a, b) < 0 without building keys (it runs over every resource of a snapshot). */
function before(
  a: Pick<Resource, 'apiVersion' | 'kind' | 'metadata'>,
  b: Pick<Resource, 'apiVersion' | 'kind' | 'metadata'>,
): boolean {
  if (a.apiVersion !== b.apiVersion) return a.apiVersion < b.apiVersion;
  if (a.kind !== b.kind) return a.kind < b.kind;
  const an = a.metadata.namespace ?? '';
  const bn = b.metadata.namespace ?? '';
  if (an !== bn) return an < bn;
  return a.metadata.name < b.metadata.name;
}

/** Whether every resource comes strictly before the next (sorted, no key twice). */
function strictlySorted(list: readonly Resource[]): boolean {
  for (let i = 1; i < list.length; i++) if (!before(list[i - 1] as Resource, list[i] as Resource)) return false;
  return true;
}

/** Frozen lists found strictly sorted: a held snapshot's resources are the base of every delta against it. */
const sortedLists = new WeakSet<readonly Resource[]>();

/** strictlySorted, remembered for a frozen list (whose order cannot change). */
function isStrictlySorted(list: readonly Resource[]): boolean {
  if (sortedLists.has(list)) return true;
  if (!strictlySorted(list)) return false;
  if (Object.isFrozen(list)) sortedLists.add(list);
  return true;
}

/** Appends the encoding of a held resource (see heldEncoding) for the digest of a list. */
function heldPieces(r: Resource, out: (string | Uint8Array)[]): void {
  out.push(heldEncoding(r));
}

/** Deltas are small, so they are compressed from a much lower size than full snapshots. */
export const DELTA_COMPRESS_ABOVE_BYTES = 1024;

/** The frames that take a receiver holding a base to a snapshot, and which kind they are. */
export interface ChosenFrames extends SnapshotFrames {
  readonly kind: 'full' | 'delta';
  /** Encoded header plus chunk payload: what travels. */
  readonly wireBytes: number;
}

type Target = HeldResources &
  Omit<FrameInput, 'hash' | 'encoding' | 'delta'> & {
    /** Size of the canonical encoding of `resources`, when known: lets a delta go without framing the snapshot full. */
    readonly bytes?: number;
  };

/** How a sender frames snapshots for one receiver. */
export interface SendOptions extends FrameOptions {
  /** The receiver said it takes patches and relative provenance in deltas (PullHello/Ack accepts_patches). */
  readonly patches?: boolean;
}

/**
 * Patches ride in the header, which is not compressed and must stay a small gRPC message: past
 * this many bytes of patches, changed resources travel whole in the (compressed) payload.
 */
export const MAX_HEADER_PATCH_BYTES = 64 * 1024;

/**
 * The delta frame input that takes a receiver holding `base` to `next`, or
 * undefined when there is no base or its canonical encoding is not smaller
 * than `next`'s. `hash` stays `next`'s; the payload is the upserts. With
 * `patches`, a changed resource whose RFC 6902 patch is smaller than it goes as
 * that patch, and the provenance goes relative to the base's.
 */
export async function deltaInput(
  base: HeldResources | undefined,
  next: Target,
  fullBytes: number,
  nextParts?: readonly string[],
  patches = false,
): Promise<FrameInput | undefined> {
  if (!base || base.hash === next.hash) return undefined;
  const delta = await diffResources(base.resources, next.resources, nextParts, new LoopSlicer());
  const { upserts, patched } = patches
    ? patchesOf(delta.upserts, delta.replaced)
    : { upserts: delta.upserts, patched: [] };
  const payload = canonicalJson(upserts);
  if (deltaBytes(payload, delta.deletedKeys, patched) >= fullBytes) return undefined;
  const { hash, resources: _, bytes: __, ...rest } = next;
  const header: DeltaHeader = {
    baseHash: base.hash,
    payloadHash: sha256Hex(payload),
    deletedKeys: delta.deletedKeys,
    ...(patched.length > 0 ? { patches: patched } : {}),
  };
  if (!patches || !next.provenance || next.provenance.length === 0)
    return { ...rest, hash, encoding: payload, delta: header };
  const change = provenanceChange(base.provenance ?? [], next.provenance);
  return {
    ...rest,
    provenance: change.changed,
    hash,
    encoding: payload,
    delta: {
      ...header,
      provenance: {
        removed: change.removed,
        hash: change.hash,
        ...(change.epochOfBase ? { epochOfBase: change.epochOfBase } : {}),
      },
    },
  };
}

/**
 * Splits changed resources into patches (where smaller, within MAX_HEADER_PATCH_BYTES and the
 * receiver's default operation limits, DEFAULT_PATCH_LIMITS) and whole upserts.
 */
function patchesOf(
  changed: readonly Resource[],
  replaced: ReadonlyMap<Resource, Resource>,
): { upserts: Resource[]; patched: ResourcePatch[] } {
  const upserts: Resource[] = [];
  const patched: ResourcePatch[] = [];
  let budget = MAX_HEADER_PATCH_BYTES;
  let opsLeft = DEFAULT_PATCH_LIMITS.maxOpsPerDelta;
  for (const r of changed) {
    const old = replaced.get(r);
    const patch = old && budget > 0 ? resourcePatch(old, r, resourceEncoding(r)) : undefined;
    const cost = patch ? Buffer.byteLength(patch.key) + Buffer.byteLength(patch.ops) : 0;
    const ops = patch ? operationCount(patch.ops) : 0;
    if (patch && cost <= budget && ops <= Math.min(opsLeft, DEFAULT_PATCH_LIMITS.maxOpsPerResource)) {
      patched.push(patch);
      budget -= cost;
      opsLeft -= ops;
    } else upserts.push(r);
  }
  return { upserts, patched };
}

/**
 * Operations in a patch's JSON text, or more: each starts `{"op":` (JSON.stringify writes `op`
 * first), and that text elsewhere (a value's own member named op) only makes the count larger.
 */
function operationCount(ops: string): number {
  let count = 0;
  for (let at = ops.indexOf('{"op":'); at >= 0; at = ops.indexOf('{"op":', at + 6)) count++;
  return count;
}

/**
 * Deflate cannot compress by more than 1032:1 (zlib's technical details), so a gzip'd payload
 * of n bytes travels in at least n / 1032 bytes.
 */
const MAX_DEFLATE_RATIO = 1032;

/** Fewest bytes `next` can travel in full: its header (one chunk) plus its payload at the best compression possible. */
function fullWireLowerBound(next: Target & { readonly bytes: number }, options: FrameOptions): number {
  const compressed = next.bytes > (options.compressAboveBytes ?? DEFAULT_COMPRESS_ABOVE_BYTES);
  const header = snapshotHeader(next, 1, next.bytes, compressed);
  return snapshotWireBytes(header, compressed ? Math.floor(next.bytes / MAX_DEFLATE_RATIO) : next.bytes);
}

/**
 * Frames `next` for a receiver holding `base`: as a delta when that is smaller
 * on the wire than `next` sent full (both compared as they travel, after
 * compression), else full. When `next.bytes` is known and the delta is smaller
 * than the least `next` could take in full, the full frames are not built at
 * all (the choice is the same: the full form could only be larger). Sending
 * nothing when the receiver already holds `next` is the caller's job.
 */
export async function encodeSnapshotFor(
  base: HeldResources | undefined,
  next: Target,
  options: SendOptions = {},
): Promise<ChosenFrames> {
  const { patches = false, ...frameOptions } = options;
  const deltaOptions = {
    ...frameOptions,
    compressAboveBytes: Math.min(
      frameOptions.compressAboveBytes ?? DELTA_COMPRESS_ABOVE_BYTES,
      DELTA_COMPRESS_ABOVE_BYTES,
    ),
  };
  const bytes = next.bytes;
  let delta: ChosenFrames | undefined;
  if (bytes !== undefined) {
    const input = await deltaInput(base, next, bytes, undefined, patches);
    if (!input) return (await encodeFull(next, frameOptions)).frames;
    delta = chosen('delta', await encodeSnapshotFrames(input, deltaOptions));
    if (delta.wireBytes < fullWireLowerBound({ ...next, bytes }, frameOptions)) return delta;
  }
  const full = await encodeFull(next, frameOptions);
  if (!delta) {
    const input = await deltaInput(base, next, full.bytes, full.parts, patches);
    delta = input && chosen('delta', await encodeSnapshotFrames(input, deltaOptions));
  }
  return delta && delta.wireBytes < full.frames.wireBytes ? delta : full.frames;
}

/** `next` framed full, with its resources' canonical encodings and the total size. */
async function encodeFull(
  next: Target,
  options: FrameOptions,
): Promise<{ frames: ChosenFrames; parts: string[]; bytes: number }> {
  const { hash, resources: _, bytes: __, ...rest } = next;
  const slicer = new LoopSlicer();
  const parts = await canonicalParts(next.resources, slicer);
  const encoding = await utf8ArrayInSlices(parts, slicer);
  return {
    frames: chosen('full', await encodeSnapshotFrames({ ...rest, hash, encoding }, options)),
    parts,
    bytes: encoding.length,
  };
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
  return {
    ...frames,
    kind,
    wireBytes: snapshotWireBytes(
      frames.header,
      frames.chunks.reduce((n, c) => n + (c.data?.length ?? 0), 0),
    ),
  };
}

/**
 * Turns an assembled snapshot into the full one it stands for. A full snapshot
 * is returned as is. A delta is applied to `held`; it is refused with
 * MESHRELAY_ERR_DELTA_BASE_MISMATCH when `held` is not its base or the result
 * does not hash to the announced result (the sender then sends it full), and
 * with MESHRELAY_ERR_SNAPSHOT_TOO_LARGE when the result is over the limits. Its patches are
 * held to `limits.patch` (DEFAULT_PATCH_LIMITS when unset) and the size limit as each operation
 * applies: past one the delta is refused with MESHRELAY_ERR_DELTA_LIMIT before the value is built.
 */
export async function resolveDelta(
  assembled: AssembledSnapshot,
  held: HeldResources | undefined,
  limits: AssemblyLimits & { readonly patch?: PatchLimits },
): Promise<AssembledSnapshot> {
  const delta = assembled.delta;
  if (!delta) return assembled;
  if (!held || held.hash !== delta.baseHash) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
      `delta is based on ${delta.baseHash}, but the snapshot held is ${held?.hash || 'none'}`,
    );
  }
  const provenance = delta.provenance
    ? applyProvenanceChange(held.provenance ?? [], { changed: assembled.provenance, ...delta.provenance })
    : assembled.provenance;
  const patchLimits = {
    maxBytes: limits.maxBytes,
    ...(limits.patch ? { patch: limits.patch } : {}),
    ...(held.bytes !== undefined ? { baseBytes: held.bytes } : {}),
  };
  const result = await applyDelta(
    held.resources,
    {
      upserts: assembled.resources,
      deletedKeys: delta.deletedKeys,
      ...(delta.patches ? { patches: delta.patches } : {}),
    },
    patchLimits,
  );
  if (result.resources.length > limits.maxResources) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
      `snapshot after the delta has ${result.resources.length} resources; the limit is ${limits.maxResources}`,
    );
  }
  const { bytes } = result;
  if (bytes > limits.maxBytes) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
      `snapshot after the delta is ${bytes} bytes; the limit is ${limits.maxBytes} bytes`,
    );
  }
  if (result.hash !== assembled.hash) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
      `delta applied to ${delta.baseHash} hashes to ${result.hash}, not the announced ${assembled.hash}`,
    );
  }
  const { delta: _, ...rest } = assembled;
  return { ...rest, resources: result.resources, provenance, ...(result.sorted ? { canonicalBytes: bytes } : {}) };
}
