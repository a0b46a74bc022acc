import { createHash } from 'node:crypto';
import {
  canonicalCopy,
  canonicalJson,
  canonicalPieces,
  deepFreeze,
  hasKnownEncoding,
  keepEncoding,
  keepStringifiable,
  keptEncoding,
  stringifiesCanonically,
} from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { compareResources, formatResourceKey, resourceKey, type Resource } from './resource.ts';
import { digestResourceList } from './resumable-digest.ts';

/** Where an output came from: one (cluster, input hash) pair per input snapshot admitted into translation. */
export interface Provenance {
  readonly cluster: string;
  readonly inputHash: string;
  /**
   * Set when the cluster's input was not admitted and its last known input was
   * carried over instead (DESIGN §13): the output keeps what the cluster
   * contributed, from the input with `inputHash`.
   */
  readonly stale?: boolean;
  /** Epoch and generation of that input: ordered within one epoch (absent when unknown). */
  readonly epoch?: string;
  readonly generation?: number;
}

/**
 * A plain copy of a provenance entry (from any source, e.g. a decoded message):
 * `stale` only when true, `epoch`/`generation` only when an epoch is known.
 */
export function copyProvenance(p: {
  readonly cluster?: string | null;
  readonly inputHash?: string | null;
  readonly stale?: boolean | null;
  readonly epoch?: string | null;
  readonly generation?: number | null;
}): Provenance {
  return {
    cluster: p.cluster ?? '',
    inputHash: p.inputHash ?? '',
    ...(p.stale === true ? { stale: true } : {}),
    ...(p.epoch ? { epoch: p.epoch, generation: Number(p.generation ?? 0) } : {}),
  };
}

/** Everything discovered in one cluster. Immutable; `hash` covers `resources` only. */
export interface InputSnapshot {
  readonly cluster: string;
  /** Random id chosen when the agent started; generations are ordered within an epoch. */
  readonly epoch: string;
  readonly generation: number;
  readonly hash: string;
  /** Size of the canonical encoding in bytes. */
  readonly bytes: number;
  readonly resources: readonly Resource[];
}

/** Everything one cluster must apply. Immutable; `hash` covers `resources` only, not provenance. */
export interface OutputSnapshot {
  readonly cluster: string;
  readonly hash: string;
  readonly bytes: number;
  readonly resources: readonly Resource[];
  readonly provenance: readonly Provenance[];
}

export interface EncodedResources {
  readonly resources: readonly Resource[];
  readonly encoding: string;
  readonly hash: string;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Canonical encodings of the deep-frozen canonical resources `canonicalResource` built, by
 * identity: a frozen object cannot change, so its encoding is computed once and reused by
 * every snapshot that holds it. They are kept in canonical.ts's table of known encodings, so
 * `canonicalJson` of such a resource (the Redis codec, the send path, deltas) is a lookup too.
 */
const encodings = {
  has: hasKnownEncoding,
  get: keptEncoding,
  set: keepEncoding,
};
let encodedCount = 0;

/**
 * The deep-frozen canonical copy of `resource` (keys in canonical order, `undefined` members
 * gone): `resource` itself when it is already one, else a copy made through its canonical
 * encoding, which is kept with the copy unless it links parts kept elsewhere (see
 * CanonicalCopy.shared: the ServiceEntries of the outputs link their endpoint groups, and kept
 * and flattened by the wire, Redis and hashing they would hold private copies of them; see
 * docs/design/decisions/README.md#shared-encoding-parts);
 * `resourceEncoding` joins such an encoding again from its parts. Does not mutate its argument.
 * Frozen canonical parts of `resource` (e.g. the spec of another canonical resource) are shared
 * and not re-encoded; `keepParts` remembers the encodings of the copy's larger parts for the next
 * such resource (outputs; inputs, which are not rebuilt around, leave it off to save memory, and
 * keep no text of their own where `JSON.stringify` writes it: see `keepStringifiable`).
 */
export function canonicalResource(resource: Resource, keepParts = true): Resource {
  if (encodings.has(resource)) return resource;
  const shared = unencoded.get(resource);
  if (shared !== undefined) {
    if (!shared) encodings.set(resource, canonicalJson(resource));
    return resource;
  }
  const { encoding, copy, shared: links } = canonicalCopy(resource, keepParts);
  encodedCount += 1;
  if (links) unencoded.set(copy as Resource, true);
  // An input's copy keeps no text when a native stringify writes it again (see keepStringifiable).
  else if (!keepParts && stringifiesCanonically(copy)) keepStringifiable(copy as Resource);
  else encodings.set(copy as Resource, encoding);
  return copy as Resource;
}

/**
 * Canonical copies whose encoding is not kept, with whether it links shared parts (see `unencodedCanonicalResource`,
 * `canonicalResource`).
 */
const unencoded = new WeakMap<object, boolean>();

/**
 * `canonicalResource` for an intermediate resource that never goes out as it is (e.g. an output
 * before its sources annotation): the same deep-frozen canonical copy, and its encoding, which
 * is returned with it, but the encoding is not kept with the copy (`resourceEncoding` computes
 * it again). That saves a copy of the text of every large intermediate resource.
 */
export function unencodedCanonicalResource(resource: Resource): { resource: Resource; encoding: string } {
  if (encodings.has(resource)) return { resource, encoding: encodings.get(resource) as string };
  if (unencoded.has(resource)) return { resource, encoding: canonicalJson(resource) };
  const { encoding, copy, shared } = canonicalCopy(resource, true);
  encodedCount += 1;
  unencoded.set(copy as Resource, shared);
  return { resource: copy as Resource, encoding };
}

/** Whether `resource` is a deep-frozen canonical copy built by `canonicalResource` (it can never change). */
export function isCanonicalResource(resource: Resource): boolean {
  return encodings.has(resource) || unencoded.has(resource);
}

/**
 * Appends the canonical encoding of one resource to `out`: the kept string, or, for a canonical
 * copy whose encoding links shared parts (not kept, see `canonicalResource`), its pieces (see
 * `canonicalPieces`), so reading it does not flatten a copy of every part it links.
 */
export function resourceEncodingPieces(resource: Resource, out: (string | Uint8Array)[]): void {
  const kept = encodings.get(resource);
  if (kept !== undefined) out.push(kept);
  else canonicalPieces(resource, out);
}

/** The canonical encoding of one resource (cached for canonical copies). */
export function resourceEncoding(resource: Resource): string {
  return encodings.get(resource) ?? canonicalJson(resource);
}

/** How many resources were canonically encoded in this process so far: lets tests see what was re-encoded. */
export function canonicalEncodingCount(): number {
  return encodedCount;
}

/**
 * Sorts, freezes and encodes a resource list canonically.
 * Throws MESHRELAY_ERR_INVALID_RESOURCE when two resources share a key.
 * Does not mutate its argument. Resources that are canonical copies already (see
 * `canonicalResource`) are kept as they are and not re-encoded; the list's encoding is the
 * sorted resources' encodings joined, which is exactly the canonical JSON of the sorted array.
 */
export function encodeResources(resources: readonly Resource[], keepParts = true): EncodedResources {
  const copies = sortedCanonicalCopies(resources, keepParts);
  const encoding = joinEncodings(copies);
  return { resources: copies, encoding, hash: sha256Hex(encoding) };
}

/**
 * The canonical copies of `resources`, sorted and frozen; throws MESHRELAY_ERR_INVALID_RESOURCE when two share a key.
 */
function sortedCanonicalCopies(resources: readonly Resource[], keepParts: boolean): readonly Resource[] {
  const copies = resources.map((r) => canonicalResource(r, keepParts)).sort(compareResources);
  for (let i = 1; i < copies.length; i++) {
    const prev = copies[i - 1] as Resource;
    const cur = copies[i] as Resource;
    if (compareResources(prev, cur) === 0) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_RESOURCE',
        `duplicate resource ${formatResourceKey(resourceKey(cur))}`,
      );
    }
  }
  return Object.freeze(copies);
}

/** `[` + encodings joined by `,` + `]`: the canonical JSON of an array of canonical resources. */
function joinEncodings(resources: readonly Resource[]): string {
  return `[${resources.map(resourceEncoding).join(',')}]`;
}

export interface InputSnapshotInit {
  readonly cluster: string;
  readonly epoch: string;
  readonly generation: number;
  readonly resources: readonly Resource[];
}

export function buildInputSnapshot(init: InputSnapshotInit): InputSnapshot {
  const encoded = encodeResources(init.resources, false);
  return Object.freeze({
    cluster: init.cluster,
    epoch: init.epoch,
    generation: init.generation,
    hash: encoded.hash,
    bytes: Buffer.byteLength(encoded.encoding),
    resources: encoded.resources,
  });
}

export interface OutputSnapshotInit {
  readonly cluster: string;
  readonly resources: readonly Resource[];
  readonly provenance: readonly Provenance[];
}

/**
 * The output snapshot of `init`. `previous`, when given, is an earlier output (of the same cluster,
 * say) built here: the hash resumes from where its resources and these first differ (see
 * resumable-digest.ts). The result is the same either way.
 */
export function buildOutputSnapshot(init: OutputSnapshotInit, previous?: OutputSnapshot): OutputSnapshot {
  const resources = sortedCanonicalCopies(init.resources, true);
  const { hash, bytes } = digestResourceList(resources, resourceEncodingPieces, previous?.resources);
  return Object.freeze({
    cluster: init.cluster,
    hash,
    bytes,
    resources,
    provenance: frozenProvenance(init.provenance),
  });
}

/** `snapshot` with another provenance: same resources (the same frozen array), hash and size. */
export function withProvenance(snapshot: OutputSnapshot, provenance: readonly Provenance[]): OutputSnapshot {
  return Object.freeze({ ...snapshot, provenance: frozenProvenance(provenance) });
}

function frozenProvenance(provenance: readonly Provenance[]): readonly Provenance[] {
  const sorted = [...provenance]
    .map(copyProvenance)
    .sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  return deepFreeze(sorted);
}

/** The canonical encoding of a snapshot's resources (what `hash` is computed over). */
export function snapshotEncoding(snapshot: { readonly resources: readonly Resource[] }): string {
  return joinEncodings(snapshot.resources);
}
