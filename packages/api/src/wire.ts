import { gunzipSync, gzipSync } from 'node:zlib';
import { MeshrelayError } from './errors.ts';
import { relay } from './gen/relay.js';
import type { Provenance } from './snapshot.ts';
import { copyProvenance, sha256Hex } from './snapshot.ts';
import { isRecord, type Resource } from './resource.ts';

export const DEFAULT_CHUNK_BYTES = 256 * 1024;
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
  /** The canonical encoding of the resources (see snapshotEncoding). */
  readonly encoding: string;
  readonly provenance?: readonly Provenance[];
}

/** Splits one snapshot into a header and in-order chunks, compressing large ones. */
export function encodeSnapshotFrames(input: FrameInput, options: FrameOptions = {}): SnapshotFrames {
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const raw = Buffer.from(input.encoding, 'utf8');
  const compress = raw.length > (options.compressAboveBytes ?? DEFAULT_COMPRESS_ABOVE_BYTES);
  const payload = compress ? gzipSync(raw) : raw;
  const chunks: relay.v1.ISnapshotChunk[] = [];
  for (let offset = 0, index = 0; offset < payload.length || index === 0; offset += chunkBytes, index++) {
    chunks.push({ index, data: payload.subarray(offset, offset + chunkBytes) });
  }
  const header: relay.v1.ISnapshotHeader = {
    epoch: input.epoch ?? '',
    generation: input.generation ?? 0,
    hash: input.hash,
    totalChunks: chunks.length,
    totalBytes: raw.length,
    encoding: compress ? relay.v1.Encoding.ENCODING_JSON_GZIP : relay.v1.Encoding.ENCODING_JSON,
    provenance: (input.provenance ?? []).map(copyProvenance),
  };
  return { header, chunks };
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
  readonly provenance: readonly Provenance[];
}

/**
 * Reassembles one snapshot from a header and its chunks, enforcing limits before
 * buffering and checking the declared hash against the received bytes.
 * Every failure is a MeshrelayError naming what was wrong; the caller keeps its
 * previous snapshot.
 */
export class SnapshotAssembler {
  readonly #limits: AssemblyLimits;
  readonly #header: relay.v1.ISnapshotHeader;
  readonly #parts: Buffer[] = [];
  #received = 0;

  constructor(header: relay.v1.ISnapshotHeader, limits: AssemblyLimits) {
    this.#limits = limits;
    const totalBytes = Number(header.totalBytes ?? 0);
    const totalChunks = Number(header.totalChunks ?? 0);
    if (!header.hash || !/^[0-9a-f]{64}$/.test(header.hash)) {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', 'snapshot header has no valid sha256 hash');
    }
    if (totalChunks < 1) {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', 'snapshot header declares no chunks');
    }
    if (totalBytes > limits.maxBytes) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
        `snapshot of ${totalBytes} bytes exceeds the limit of ${limits.maxBytes} bytes`,
      );
    }
    this.#header = header;
  }

  get header(): relay.v1.ISnapshotHeader {
    return this.#header;
  }

  /** Adds the next chunk; returns true once all chunks have arrived. */
  add(chunk: relay.v1.ISnapshotChunk): boolean {
    const expected = this.#parts.length;
    if ((chunk.index ?? 0) !== expected) {
      throw new MeshrelayError('MESHRELAY_ERR_PROTOCOL', `expected chunk ${expected}, got chunk ${chunk.index ?? 0}`);
    }
    const data = Buffer.from(chunk.data ?? new Uint8Array());
    this.#received += data.length;
    // Compressed data is never larger than maxBytes for sane inputs; this bounds memory.
    if (this.#received > this.#limits.maxBytes + 1024) {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE', `snapshot chunks exceed the limit of ${this.#limits.maxBytes} bytes`);
    }
    this.#parts.push(data);
    return this.#parts.length === Number(this.#header.totalChunks);
  }

  /** Decodes the complete payload. Call only after add() returned true. */
  finish(): AssembledSnapshot {
    const payload = Buffer.concat(this.#parts);
    let raw: Buffer;
    try {
      raw =
        this.#header.encoding === relay.v1.Encoding.ENCODING_JSON_GZIP
          ? gunzipSync(payload, { maxOutputLength: this.#limits.maxBytes })
          : payload;
    } catch (err) {
      const tooLarge = (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
      throw new MeshrelayError(
        tooLarge ? 'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE' : 'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
        tooLarge ? `decompressed snapshot exceeds the limit of ${this.#limits.maxBytes} bytes` : 'snapshot payload is not valid gzip',
        { cause: err },
      );
    }
    if (raw.length > this.#limits.maxBytes) {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE', `snapshot of ${raw.length} bytes exceeds the limit of ${this.#limits.maxBytes} bytes`);
    }
    const actual = sha256Hex(raw);
    if (actual !== this.#header.hash) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
        `snapshot hash mismatch: header says ${this.#header.hash}, content hashes to ${actual}`,
      );
    }
    const resources = parseResourceArray(raw.toString('utf8'), this.#limits.maxResources);
    return {
      epoch: this.#header.epoch ?? '',
      generation: Number(this.#header.generation ?? 0),
      hash: actual,
      resources,
      provenance: (this.#header.provenance ?? []).map(copyProvenance),
    };
  }
}

function parseResourceArray(text: string, maxResources: number): Resource[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', `snapshot payload is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!Array.isArray(parsed)) {
    throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', 'snapshot payload is not a JSON array of resources');
  }
  if (parsed.length > maxResources) {
    throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE', `snapshot has ${parsed.length} resources; the limit is ${maxResources}`);
  }
  parsed.forEach((item: unknown, i) => {
    if (!isRecord(item) || typeof item['apiVersion'] !== 'string' || typeof item['kind'] !== 'string' || !isRecord(item['metadata'])) {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', `snapshot item ${i} is not a resource (needs apiVersion, kind, metadata)`);
    }
  });
  return parsed as Resource[];
}
