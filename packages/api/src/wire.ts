import { promisify } from 'node:util';
import { gunzip, gzip, gzipSync } from 'node:zlib';
import { MeshrelayError } from './errors.ts';
import { relay } from './gen/relay.js';
import { deltaBytes, deltaHeaderFields, deltaOfHeader, type DeltaHeader } from './delta-header.ts';
import type { Provenance } from './snapshot.ts';
import { copyProvenance } from './snapshot.ts';
import type { Resource } from './resource.ts';
import { parseResourceArray } from './resource-array-parser.ts';
import { LoopSlicer } from './loop-slicer.ts';
import { sha256InSlices, utf8InSlices } from './sliced-encoding.ts';

export const DEFAULT_CHUNK_BYTES = 256 * 1024;
/**
 * Every chunk but the last carries at least this many bytes, so a snapshot's
 * chunk count is bounded by its declared size (a header cannot announce
 * billions of chunks and then trickle empty ones).
 */
export const MIN_CHUNK_BYTES = 1024;
/** Resources nested deeper than this are refused at decoding (canonical encoding recurses). */
export const MAX_RESOURCE_DEPTH = 100;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
/** Snapshots whose encoding is larger than this travel gzip-compressed. */
export const DEFAULT_COMPRESS_ABOVE_BYTES = 64 * 1024;

export interface SnapshotFrames {
  readonly header: relay.v1.ISnapshotHeader;
  readonly chunks: readonly relay.v1.ISnapshotChunk[];
}

export interface FrameOptions {
  readonly chunkBytes?: number;
  readonly compressAboveBytes?: number;
}

export interface FrameInput {
  readonly epoch?: string;
  readonly generation?: number;
  readonly hash: string;
  /** The canonical encoding of the resources (see snapshotEncoding), as text or as its UTF-8 bytes. */
  readonly encoding: string | Uint8Array;
  readonly provenance?: readonly Provenance[];
  /** Set for a delta: `encoding` is then the canonical array of upserts (`hash` stays the full snapshot's). */
  readonly delta?: DeltaHeader;
}

/**
 * Splits one snapshot into a header and in-order chunks, compressing large ones
 * on the zlib thread pool, so the event loop keeps serving heartbeats.
 */
export async function encodeSnapshotFrames(input: FrameInput, options: FrameOptions = {}): Promise<SnapshotFrames> {
  const raw = utf8Of(input.encoding);
  const compress = raw.length > (options.compressAboveBytes ?? DEFAULT_COMPRESS_ABOVE_BYTES);
  return frames(input, raw, compress ? await gzipAsync(raw) : undefined, options);
}

/** encodeSnapshotFrames on the calling thread: for benchmarks and tests, not for a server's streams. */
export function encodeSnapshotFramesSync(input: FrameInput, options: FrameOptions = {}): SnapshotFrames {
  const raw = utf8Of(input.encoding);
  const compress = raw.length > (options.compressAboveBytes ?? DEFAULT_COMPRESS_ABOVE_BYTES);
  return frames(input, raw, compress ? gzipSync(raw) : undefined, options);
}

function utf8Of(encoding: string | Uint8Array): Buffer {
  return typeof encoding === 'string'
    ? Buffer.from(encoding, 'utf8')
    : Buffer.from(encoding.buffer, encoding.byteOffset, encoding.byteLength);
}

function frames(input: FrameInput, raw: Buffer, gzipped: Buffer | undefined, options: FrameOptions): SnapshotFrames {
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  if (chunkBytes < MIN_CHUNK_BYTES)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `chunks must carry at least ${MIN_CHUNK_BYTES} bytes`);
  const payload = gzipped ?? raw;
  const chunks: relay.v1.ISnapshotChunk[] = [];
  for (let offset = 0, index = 0; offset < payload.length || index === 0; offset += chunkBytes, index++) {
    chunks.push({ index, data: payload.subarray(offset, offset + chunkBytes) });
  }
  return { header: snapshotHeader(input, chunks.length, raw.length, gzipped !== undefined), chunks };
}

/**
 * The header announcing `input` in `totalChunks` chunks carrying its `totalBytes`-byte encoding (gzip'd when
 * `compressed`).
 */
export function snapshotHeader(
  input: Omit<FrameInput, 'encoding'>,
  totalChunks: number,
  totalBytes: number,
  compressed: boolean,
): relay.v1.ISnapshotHeader {
  const relative = input.delta?.provenance !== undefined;
  const epochOfBase = new Set(input.delta?.provenance?.epochOfBase);
  return {
    epoch: input.epoch ?? '',
    generation: input.generation ?? 0,
    hash: input.hash,
    totalChunks,
    totalBytes,
    encoding: compressed ? relay.v1.Encoding.ENCODING_JSON_GZIP : relay.v1.Encoding.ENCODING_JSON,
    // A relative provenance goes only to a receiver that takes patches, which reads hashes as bytes.
    provenance: relative
      ? (input.provenance ?? []).map((p) => compactProvenance(p, epochOfBase.has(p.cluster)))
      : (input.provenance ?? []).map((p): relay.v1.IProvenance => copyProvenance(p)),
    ...(input.delta ? deltaHeaderFields(input.delta) : {}),
  };
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * A relative provenance entry: its input hash as 32 bytes (input_hash_bytes) instead of hex
 * text, and without its epoch when `epochOfBase` (the receiver's base entry has the same one).
 */
function compactProvenance(p: Provenance, epochOfBase: boolean): relay.v1.IProvenance {
  const { inputHash, epoch, ...copy } = copyProvenance(p);
  const rest = epochOfBase ? { ...copy, epochOfBase: true } : { ...copy, ...(epoch !== undefined ? { epoch } : {}) };
  return SHA256_HEX.test(inputHash)
    ? { ...rest, inputHash: '', inputHashBytes: Buffer.from(inputHash, 'hex') }
    : { ...rest, inputHash };
}

/**
 * A header's provenance entry as the snapshot holds it: a hash sent as bytes becomes hex text.
 * An entry that keeps its base's epoch (relative provenance only) comes without one, for
 * resolveDelta to fill in. Throws MESHRELAY_ERR_SNAPSHOT_UNDECODABLE for hash bytes that are not
 * a sha256, and for an entry that keeps its base's epoch outside a relative provenance or names one.
 */
function provenanceOfHeader(p: relay.v1.IProvenance, relative: boolean): Provenance {
  const bytes = p.inputHashBytes;
  let inputHash = p.inputHash ?? '';
  if (bytes && bytes.length > 0) {
    if (bytes.length !== 32 || p.inputHash) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
        `provenance entry of cluster ${JSON.stringify(p.cluster ?? '')} has an input hash of ${bytes.length} bytes${p.inputHash ? ' beside a hex one' : ''}; a sha256 is 32`,
      );
    }
    inputHash = Buffer.from(bytes).toString('hex');
  }
  if (p.epochOfBase !== true) return copyProvenance({ ...p, inputHash });
  if (!relative)
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
      `provenance entry of cluster ${JSON.stringify(p.cluster ?? '')} keeps the base's epoch, but the header's provenance is not relative to a base`,
    );
  if (p.epoch)
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
      `provenance entry of cluster ${JSON.stringify(p.cluster ?? '')} keeps the base's epoch but names one`,
    );
  // Its epoch is the base's entry's: resolveDelta fills it in (applyProvenanceChange).
  return {
    cluster: p.cluster ?? '',
    inputHash,
    ...(p.stale === true ? { stale: true } : {}),
    generation: Number(p.generation ?? 0),
  };
}

/** A snapshot's bytes on the wire: its encoded header plus its chunks' payload (compressed when it travels so). */
export function snapshotWireBytes(header: relay.v1.ISnapshotHeader, payloadBytes: number): number {
  return relay.v1.SnapshotHeader.encode(header).finish().length + payloadBytes;
}

export interface AssemblyLimits {
  /** Largest accepted canonical encoding, in bytes (before compression). */
  readonly maxBytes: number;
  readonly maxResources: number;
}

export interface AssembledSnapshot {
  readonly epoch: string;
  readonly generation: number;
  readonly hash: string;
  readonly resources: readonly Resource[];
  /**
   * For a delta with relative provenance (delta.provenance set): only the entries that changed, until resolveDelta
   * rebuilds the whole list.
   */
  readonly provenance: readonly Provenance[];
  /**
   * Set for a delta: `resources` are then its upserts and `hash` the announced
   * result, checked only by resolveDelta against the held snapshot.
   */
  readonly delta?: DeltaHeader;
  /**
   * A full snapshot only: each resource's text as received. The payload hashed to the announced
   * hash, which is the hash of the canonical encoding, so these are the resources' canonical
   * encodings (see rememberReceivedEncodings).
   */
  readonly texts?: readonly string[];
  /**
   * Set by resolveDelta on the snapshot a delta resolved to: `resources` are then sorted, unique,
   * frozen, and `hash` was checked to be sha256 of their canonical encoding, which is this many
   * bytes. A receiver may take the hash as it is instead of encoding and hashing them again.
   */
  readonly canonicalBytes?: number;
}

/** The most payload bytes a snapshot declaring `totalBytes` may carry (gzip of incompressible data grows a little). */
function payloadBound(totalBytes: number): number {
  return totalBytes + Math.ceil(totalBytes / 256) + 1024;
}

/**
 * Reassembles one snapshot from a header and its chunks, enforcing limits before
 * buffering: the declared size against the limit, the declared chunk count
 * against what that size needs, every chunk against the declared size. Nothing
 * beyond the declared size is ever buffered. The declared hash is checked
 * against the received bytes. Every failure is a MeshrelayError naming what was
 * wrong; the caller keeps its previous snapshot.
 */
export class SnapshotAssembler {
  readonly #limits: AssemblyLimits;
  readonly #header: relay.v1.ISnapshotHeader;
  readonly #totalChunks: number;
  readonly #totalBytes: number;
  readonly #parts: Buffer[] = [];
  #received = 0;

  constructor(header: relay.v1.ISnapshotHeader, limits: AssemblyLimits) {
    this.#limits = limits;
    const totalBytes = Number(header.totalBytes ?? 0);
    const totalChunks = Number(header.totalChunks ?? 0);
    if (!header.hash || !/^[0-9a-f]{64}$/.test(header.hash)) {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', 'snapshot header has no valid sha256 hash');
    }
    const delta = deltaOfHeader(header);
    if (delta) SnapshotAssembler.checkDelta(delta, totalBytes, limits);
    if (totalChunks < 1) {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', 'snapshot header declares no chunks');
    }
    // A chunk count the declared size cannot need is a framing violation, not a
    // big snapshot: it ends the stream (no chunks of it are read and dropped).
    const maxChunks = SnapshotAssembler.maxChunks(Math.min(totalBytes, limits.maxBytes));
    if (totalChunks > maxChunks) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_PROTOCOL',
        `snapshot header declares ${totalChunks} chunks; ${Math.min(totalBytes, limits.maxBytes)} bytes travel in at most ${maxChunks} chunks of at least ${MIN_CHUNK_BYTES} bytes`,
      );
    }
    if (totalBytes > limits.maxBytes) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
        `snapshot of ${totalBytes} bytes exceeds the limit of ${limits.maxBytes} bytes`,
      );
    }
    this.#header = header;
    this.#totalChunks = totalChunks;
    this.#totalBytes = totalBytes;
  }

  /** A delta's base and payload must be hashes, and its deleted keys count against the same limits as its payload. */
  static checkDelta(delta: DeltaHeader, totalBytes: number, limits: AssemblyLimits): void {
    if (!/^[0-9a-f]{64}$/.test(delta.baseHash) || !/^[0-9a-f]{64}$/.test(delta.payloadHash)) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
        'delta snapshot header has no valid sha256 base and payload hashes',
      );
    }
    if (delta.provenance && !/^[0-9a-f]{64}$/.test(delta.provenance.hash)) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
        'delta snapshot header has relative provenance without a valid sha256 provenance hash',
      );
    }
    const touched = delta.deletedKeys.length + (delta.patches?.length ?? 0);
    if (touched > limits.maxResources) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
        `delta deletes or patches ${touched} resources; the limit is ${limits.maxResources}`,
      );
    }
    const bytes = totalBytes + deltaBytes('', delta.deletedKeys, delta.patches);
    if (bytes > limits.maxBytes) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
        `delta of ${bytes} bytes exceeds the limit of ${limits.maxBytes} bytes`,
      );
    }
  }

  /** The most chunks a snapshot of `totalBytes` (uncompressed) may be split into. */
  static maxChunks(totalBytes: number): number {
    return Math.max(1, Math.ceil(payloadBound(totalBytes) / MIN_CHUNK_BYTES));
  }

  get header(): relay.v1.ISnapshotHeader {
    return this.#header;
  }

  /** Payload bytes received so far (compressed, as they travel). */
  get receivedBytes(): number {
    return this.#received;
  }

  /** Adds the next chunk; returns true once all chunks have arrived. */
  add(chunk: relay.v1.ISnapshotChunk): boolean {
    const expected = this.#parts.length;
    if ((chunk.index ?? 0) !== expected) {
      throw new MeshrelayError('MESHRELAY_ERR_PROTOCOL', `expected chunk ${expected}, got chunk ${chunk.index ?? 0}`);
    }
    const data = Buffer.from(chunk.data ?? new Uint8Array());
    const last = expected + 1 === this.#totalChunks;
    if (!last && data.length < MIN_CHUNK_BYTES) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_PROTOCOL',
        `chunk ${expected} carries ${data.length} bytes; every chunk but the last carries at least ${MIN_CHUNK_BYTES}`,
      );
    }
    this.#received += data.length;
    const bound = Math.min(payloadBound(this.#totalBytes), payloadBound(this.#limits.maxBytes));
    if (this.#received > bound) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_PROTOCOL',
        `snapshot chunks carry more than the declared ${this.#totalBytes} bytes allow`,
      );
    }
    this.#parts.push(data);
    return last;
  }

  /**
   * Decodes the complete payload: gunzip on the zlib thread pool, hashing,
   * UTF-8 decoding and parsing in slices that give the event loop a turn every
   * ~20 ms. Call only after add() returned true.
   */
  async finish(): Promise<AssembledSnapshot> {
    const payload = Buffer.concat(this.#parts);
    this.#parts.length = 0;
    const limit = Math.min(this.#limits.maxBytes, this.#totalBytes);
    let raw: Buffer;
    try {
      raw =
        this.#header.encoding === relay.v1.Encoding.ENCODING_JSON_GZIP
          ? await gunzipAsync(payload, { maxOutputLength: Math.max(1, limit) })
          : payload;
    } catch (err) {
      const tooLarge = (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
      throw new MeshrelayError(
        tooLarge ? 'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE' : 'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
        tooLarge
          ? `decompressed snapshot exceeds its declared ${this.#totalBytes} bytes (limit ${this.#limits.maxBytes})`
          : 'snapshot payload is not valid gzip',
        { cause: err },
      );
    }
    if (raw.length > this.#limits.maxBytes) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
        `snapshot of ${raw.length} bytes exceeds the limit of ${this.#limits.maxBytes} bytes`,
      );
    }
    // A delta's payload is checked against its payload hash; the result against `hash` when it is resolved.
    const delta = deltaOfHeader(this.#header);
    const expected = delta ? delta.payloadHash : this.#header.hash;
    const slicer = new LoopSlicer();
    const actual = await sha256InSlices(raw, slicer);
    if (actual !== expected) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
        `snapshot hash mismatch: header says ${expected}, content hashes to ${actual}`,
      );
    }
    const text = await utf8InSlices(raw, slicer);
    const texts = delta ? undefined : ([] as string[]);
    const resources = await parseResourceArray(
      text,
      { maxResources: this.#limits.maxResources, maxDepth: MAX_RESOURCE_DEPTH },
      slicer,
      texts,
    );
    return {
      ...(texts ? { texts } : {}),
      epoch: this.#header.epoch ?? '',
      generation: Number(this.#header.generation ?? 0),
      hash: this.#header.hash ?? '',
      resources,
      provenance: (this.#header.provenance ?? []).map((p) => provenanceOfHeader(p, delta?.provenance !== undefined)),
      ...(delta ? { delta } : {}),
    };
  }
}
