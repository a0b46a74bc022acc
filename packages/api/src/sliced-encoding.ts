import { createHash } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { deepFreeze, keepEncoding, keepStringifiable, stringifiesCanonically } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { LoopSlicer } from './loop-slicer.ts';
import { compareResources, formatResourceKey, resourceKey, type Resource } from './resource.ts';
import { digestResourceListInSlices } from './resumable-digest.ts';
import { deepFreezeSharingStrings, StringPool } from './string-pool.ts';
import {
  canonicalResource,
  copyProvenance,
  resourceEncodingPieces,
  type InputSnapshot,
  type InputSnapshotInit,
  type OutputSnapshot,
  type OutputSnapshotInit,
} from './snapshot.ts';

/*
 * The snapshot builders of snapshot.ts, done in slices that give the event loop
 * a turn every ~20 ms (LoopSlicer). They give exactly what buildInputSnapshot,
 * buildOutputSnapshot and encodeResources give (same copies, order, freezing,
 * hash and errors), for the large snapshots a relay stream takes in: encoding a
 * full-size snapshot costs seconds (see
 * docs/design/decisions/README.md#sliced-encoding), which must not hold
 * heartbeats, acks and the HTTP API up. No single step is long (each resource
 * is encoded, copied and frozen on its own), so no worker thread is needed.
 * Each resource goes through snapshot.ts's one-pass canonical copy
 * (`canonicalResource`), so the copies are the same canonical resources the
 * one-shot builders make (their encodings kept with them, a resource that is
 * one already is neither copied nor encoded again).
 */

/** Bytes hashed or decoded between two checks of the slice budget. */
const BYTES_PER_STEP = 1024 * 1024;

/** encodeResources without the joined encoding: the frozen sorted copies, their hash and the encoding's size. */
export interface SlicedEncoding {
  readonly resources: readonly Resource[];
  readonly hash: string;
  readonly bytes: number;
}

/**
 * encodeResources in slices. Resources that arrive sorted (as the wire requires)
 * are not sorted again; unsorted ones are sorted in one step. The hash keeps
 * checkpoints (see resumable-digest.ts): a delta against the result resumes from them.
 * Throws MESHRELAY_ERR_INVALID_RESOURCE when two resources share a key.
 */
export async function encodeResourcesInSlices(
  resources: readonly Resource[],
  slicer = new LoopSlicer(),
  keepParts = false,
): Promise<SlicedEncoding> {
  const copies: Resource[] = [];
  for (const r of resources) {
    copies.push(canonicalResource(r, keepParts));
    if (slicer.due()) await slicer.yield();
  }
  if (!(await isSorted(copies, slicer))) copies.sort(compareResources);
  for (let i = 1; i < copies.length; i++) {
    const copy = copies[i] as Resource;
    if (compareResources(copies[i - 1] as Resource, copy) === 0)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_RESOURCE',
        `duplicate resource ${formatResourceKey(resourceKey(copy))}`,
      );
  }
  Object.freeze(copies);
  const { hash, bytes } = await digestResourceListInSlices(copies, resourceEncodingPieces, undefined, slicer);
  return { resources: copies, hash, bytes };
}

async function isSorted(copies: readonly Resource[], slicer: LoopSlicer): Promise<boolean> {
  for (let i = 1; i < copies.length; i++) {
    if (compareResources(copies[i - 1] as Resource, copies[i] as Resource) > 0) return false;
    if (i % 1024 === 0) await slicer.pause();
  }
  return true;
}

/**
 * The input snapshot of resources parsed from a text that claims to be their canonical encoding
 * (`texts[i]` is the JSON text `resources[i]` was parsed from, as stored by this product), without
 * copying or encoding anything: when the texts, joined as an array, hash to `claimedHash` and the
 * resources are strictly sorted, each resource is deep-frozen (its short strings shared across the
 * snapshot, see StringPool) and its encoding known: written again by `JSON.stringify` (see
 * keepStringifiable), or its text kept where V8 enumerates its keys out of canonical order. Otherwise undefined: the
 * caller builds the snapshot the ordinary way, which
 * re-encodes and reports what is wrong. (A text parses to an object whose canonical encoding is
 * that text exactly when the text is canonical; the hash, which a writer computes over the
 * canonical encoding, is what says it is.)
 */
export async function adoptCanonicalInputSnapshot(
  init: InputSnapshotInit,
  texts: readonly string[],
  claimedHash: string,
  slicer = new LoopSlicer(),
): Promise<InputSnapshot | undefined> {
  const { resources } = init;
  if (texts.length !== resources.length) return undefined;
  const hash = createHash('sha256').update('[');
  let bytes = 2;
  for (let i = 0; i < texts.length; i++) {
    if (i > 0) {
      if (compareResources(resources[i - 1] as Resource, resources[i] as Resource) >= 0) return undefined;
      hash.update(',');
      bytes++;
    }
    const text = texts[i] as string;
    hash.update(text);
    bytes += Buffer.byteLength(text);
    if (slicer.due()) await slicer.yield();
  }
  if (hash.update(']').digest('hex') !== claimedHash) return undefined;
  const pool = new StringPool();
  for (let i = 0; i < resources.length; i++) {
    const r = deepFreezeSharingStrings(resources[i] as Resource, pool);
    // A parsed canonical text stringifies back to itself unless V8 reordered its keys.
    if (stringifiesCanonically(r)) keepStringifiable(r);
    else keepEncoding(r, texts[i] as string);
    if (slicer.due()) await slicer.yield();
  }
  return Object.freeze({
    cluster: init.cluster,
    epoch: init.epoch,
    generation: init.generation,
    hash: claimedHash,
    bytes,
    resources: Object.freeze([...resources]),
  });
}

/** buildInputSnapshot in slices. */
export async function buildInputSnapshotInSlices(
  init: InputSnapshotInit,
  slicer = new LoopSlicer(),
): Promise<InputSnapshot> {
  const encoded = await encodeResourcesInSlices(init.resources, slicer);
  return Object.freeze({
    cluster: init.cluster,
    epoch: init.epoch,
    generation: init.generation,
    hash: encoded.hash,
    bytes: encoded.bytes,
    resources: encoded.resources,
  });
}

/** buildOutputSnapshot in slices. */
export async function buildOutputSnapshotInSlices(
  init: OutputSnapshotInit,
  slicer = new LoopSlicer(),
): Promise<OutputSnapshot> {
  const encoded = await encodeResourcesInSlices(init.resources, slicer, true);
  const provenance = [...init.provenance]
    .map(copyProvenance)
    .sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  return Object.freeze({
    cluster: init.cluster,
    hash: encoded.hash,
    bytes: encoded.bytes,
    resources: encoded.resources,
    provenance: deepFreeze(provenance),
  });
}

/** sha256 (hex) of a large buffer, a MiB at a time. */
export async function sha256InSlices(data: Uint8Array, slicer = new LoopSlicer()): Promise<string> {
  const hash = createHash('sha256');
  for (let offset = 0; offset < data.length; offset += BYTES_PER_STEP) {
    hash.update(data.subarray(offset, offset + BYTES_PER_STEP));
    if (slicer.due()) await slicer.yield();
  }
  return hash.digest('hex');
}

/** UTF-8 decoding of a large buffer, a MiB at a time (a character split between two steps is kept whole). */
export async function utf8InSlices(data: Uint8Array, slicer = new LoopSlicer()): Promise<string> {
  const decoder = new StringDecoder('utf8');
  const pieces: string[] = [];
  for (let offset = 0; offset < data.length; offset += BYTES_PER_STEP) {
    pieces.push(
      decoder.write(Buffer.from(data.buffer, data.byteOffset + offset, Math.min(BYTES_PER_STEP, data.length - offset))),
    );
    if (slicer.due()) await slicer.yield();
  }
  pieces.push(decoder.end());
  return pieces.join('');
}

/**
 * `JSON.stringify(value, null, indent)`'s text for one array, built an item at
 * a time, with every line after the first indented by `depth` levels (the
 * array's nesting inside its document). Equal to JSON.stringify's output.
 */
export async function prettyJsonArrayInSlices(
  items: readonly unknown[],
  indent: number,
  depth: number,
  slicer = new LoopSlicer(),
): Promise<string> {
  if (items.length === 0) return '[]';
  const outer = ' '.repeat(indent * depth);
  const inner = ' '.repeat(indent * (depth + 1));
  const parts: string[] = [];
  for (const item of items) {
    parts.push(inner + (JSON.stringify(item, null, indent) ?? 'null').replaceAll('\n', `\n${inner}`));
    if (slicer.due()) await slicer.yield();
  }
  return `[\n${parts.join(',\n')}\n${outer}]`;
}

/** `JSON.stringify(items)` for a large array, an item at a time. */
export async function jsonArrayInSlices(items: readonly unknown[], slicer = new LoopSlicer()): Promise<string> {
  const parts: string[] = [];
  for (const item of items) {
    parts.push(JSON.stringify(item) ?? 'null');
    if (slicer.due()) await slicer.yield();
  }
  return `[${parts.join(',')}]`;
}
