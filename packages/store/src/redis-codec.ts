import {
  LoopSlicer,
  adoptCanonicalInputSnapshot,
  MAX_RESOURCE_DEPTH,
  MeshrelayError,
  buildInputSnapshotInSlices,
  buildOutputSnapshotInSlices,
  canonicalParts,
  copyProvenance,
  isRecord,
  parseWithResourcesLast,
  type InputSnapshot,
  type OutputSnapshot,
  type Provenance,
  type Resource,
} from '@meshrelay/api';

/**
 * How snapshots are laid out in Redis. A value is one JSON object: a small header (format,
 * cluster, epoch/generation or provenance, hash, writing replica) followed by `resources`, the
 * snapshot's canonical encoding spliced in verbatim. Decoding rebuilds the snapshot with the api
 * builders and checks the stored hash, so a value that was cut, edited or written by a buggy
 * peer is rejected rather than served. Encoding and decoding run in slices that give the event
 * loop a turn every ~20 ms: a 16 MiB snapshot takes seconds of both, which must not hold relay
 * heartbeats and the HTTP API up.
 */
export const VALUE_FORMAT = 1;

export interface StoreKeys {
  /** An input in the whole-value layout (format 1): still read, replaced on the next write. */
  input(cluster: string): string;
  /** An input as a hash of one field per resource (format 2; see redis-input-parts.ts). */
  inputParts(cluster: string): string;
  /**
   * A small hash (epoch, generation) kept beside each input value, so a conditional write need not decode the value.
   */
  inputVersion(cluster: string): string;
  /** An output in the whole-value layout (format 1): still read, replaced on the next write. */
  output(cluster: string): string;
  /** An output as a hash of one field per resource (format 2; see redis-output-parts.ts). */
  outputParts(cluster: string): string;
  /** The pub/sub channel of "input changed" messages. */
  readonly inputChannel: string;
}

export function storeKeys(prefix: string): StoreKeys {
  return {
    input: (cluster) => `${prefix}:input:${cluster}`,
    inputParts: (cluster) => `${prefix}:input-parts:${cluster}`,
    inputVersion: (cluster) => `${prefix}:input-version:${cluster}`,
    output: (cluster) => `${prefix}:output:${cluster}`,
    outputParts: (cluster) => `${prefix}:output-parts:${cluster}`,
    inputChannel: `${prefix}:input-changed`,
  };
}

/** A stored value as read: a whole value (format 1) or the fields of a snapshot's parts hash (format 2). */
export type Raw = string | Readonly<Record<string, string>>;

/** A snapshot read back from Redis, with the replica that wrote it. */
export interface Decoded<T> {
  readonly snapshot: T;
  readonly replica: string;
}

export async function encodeInput(snapshot: InputSnapshot, replica: string): Promise<string> {
  const header = {
    format: VALUE_FORMAT,
    cluster: snapshot.cluster,
    epoch: snapshot.epoch,
    generation: snapshot.generation,
    hash: snapshot.hash,
    replica,
  };
  return withResources(header, await encodingInSlices(snapshot.resources));
}

export async function encodeOutput(snapshot: OutputSnapshot, replica: string): Promise<string> {
  const header = {
    format: VALUE_FORMAT,
    cluster: snapshot.cluster,
    hash: snapshot.hash,
    provenance: snapshot.provenance,
    replica,
  };
  return withResources(header, await encodingInSlices(snapshot.resources));
}

/** snapshotEncoding(), a resource at a time. */
async function encodingInSlices(resources: readonly Resource[]): Promise<string> {
  return `[${(await canonicalParts(resources)).join(',')}]`;
}

function withResources(header: object, encoding: string): string {
  const head = JSON.stringify(header);
  return `${head.slice(0, -1)},"resources":${encoding}}`;
}

/**
 * Decodes an input value stored under `cluster`'s key.
 * Throws MESHRELAY_ERR_SNAPSHOT_UNDECODABLE for a malformed value and
 * MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH when the resources do not hash to the stored hash.
 */
export async function decodeInput(raw: string, cluster: string): Promise<Decoded<InputSnapshot>> {
  const slicer = new LoopSlicer();
  const texts: string[] = [];
  const value = await parseValue(raw, cluster, slicer, texts);
  const { epoch, generation } = value;
  if (typeof epoch !== 'string' || typeof generation !== 'number' || !Number.isSafeInteger(generation)) {
    throw undecodable(cluster, 'epoch or generation missing or malformed');
  }
  const init = { cluster, epoch, generation, resources: resourcesOf(value) };
  // The stored resources are their canonical encoding: when they hash to the stored hash, they are
  // taken as they are (a restarted server decodes every input, and copying and re-encoding them
  // took most of its restart; see docs/design/decisions/README.md#adopt-stored-inputs). Else the
  // ordinary build says what is wrong.
  const snapshot =
    (await adoptCanonicalInputSnapshot(init, texts, value.hash as string, slicer)) ??
    (await rebuild(cluster, () => buildInputSnapshotInSlices(init, slicer)));
  checkHash(snapshot.hash, value.hash, cluster);
  return { snapshot, replica: replicaOf(value) };
}

/** As decodeInput, for an output value (provenance included). */
export async function decodeOutput(raw: string, cluster: string): Promise<Decoded<OutputSnapshot>> {
  const slicer = new LoopSlicer();
  const value = await parseValue(raw, cluster, slicer);
  const provenance = provenanceOf(value.provenance, cluster);
  const snapshot = await rebuild(cluster, () =>
    buildOutputSnapshotInSlices({ cluster, provenance, resources: resourcesOf(value) }, slicer),
  );
  checkHash(snapshot.hash, value.hash, cluster);
  return { snapshot, replica: replicaOf(value) };
}

/** Parses a value: the small header in one step, the resources (the bulk) a resource at a time. */
async function parseValue(
  raw: string,
  cluster: string,
  slicer: LoopSlicer,
  texts?: string[],
): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = await parseWithResourcesLast(
      raw,
      { maxResources: Number.MAX_SAFE_INTEGER, maxDepth: MAX_RESOURCE_DEPTH },
      slicer,
      texts,
    );
  } catch (err) {
    throw undecodable(cluster, err instanceof MeshrelayError ? err.message : 'not JSON', err);
  }
  if (!isRecord(value)) throw undecodable(cluster, 'not a JSON object');
  if (value.format !== VALUE_FORMAT) throw undecodable(cluster, `unknown format ${JSON.stringify(value.format)}`);
  if (value.cluster !== cluster) throw undecodable(cluster, `it names cluster ${JSON.stringify(value.cluster)}`);
  if (typeof value.hash !== 'string') throw undecodable(cluster, 'hash missing');
  if (!Array.isArray(value.resources)) throw undecodable(cluster, 'resources missing');
  return value;
}

function resourcesOf(value: Record<string, unknown>): readonly Resource[] {
  // parseValue checked the array; each member's shape is checked by the builder's encoding.
  return value.resources as Resource[];
}

export function provenanceOf(value: unknown, cluster: string): readonly Provenance[] {
  if (!Array.isArray(value)) throw undecodable(cluster, 'provenance missing');
  return value.map((p: unknown) => {
    if (!isRecord(p) || typeof p.cluster !== 'string' || typeof p.inputHash !== 'string') {
      throw undecodable(cluster, 'a provenance entry is malformed');
    }
    return copyProvenance({
      cluster: p.cluster,
      inputHash: p.inputHash,
      stale: p.stale === true,
      ...(typeof p.epoch === 'string' && typeof p.generation === 'number'
        ? { epoch: p.epoch, generation: p.generation }
        : {}),
    });
  });
}

export function replicaOf(value: Record<string, unknown>): string {
  return typeof value.replica === 'string' ? value.replica : '';
}

export async function rebuild<T>(cluster: string, build: () => Promise<T>): Promise<T> {
  try {
    return await build();
  } catch (err) {
    throw undecodable(cluster, err instanceof Error ? err.message : String(err), err);
  }
}

export function checkHash(actual: string, stored: unknown, cluster: string): void {
  if (actual !== stored) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
      `stored snapshot of cluster ${cluster} declares hash ${String(stored)} but its resources hash to ${actual}`,
    );
  }
}

export function undecodable(cluster: string, reason: string, cause?: unknown): MeshrelayError {
  return new MeshrelayError(
    'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
    `stored snapshot of cluster ${cluster} is undecodable: ${reason}`,
    { cause },
  );
}
