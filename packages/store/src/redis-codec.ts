import {
  MeshrelayError,
  buildInputSnapshot,
  buildOutputSnapshot,
  copyProvenance,
  isRecord,
  snapshotEncoding,
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
 * peer is rejected rather than served.
 */
export const VALUE_FORMAT = 1;

export interface StoreKeys {
  input(cluster: string): string;
  /** A small hash (epoch, generation) kept beside each input value, so a conditional write need not decode the value. */
  inputVersion(cluster: string): string;
  output(cluster: string): string;
  /** The pub/sub channel of "input changed" messages. */
  readonly inputChannel: string;
}

export function storeKeys(prefix: string): StoreKeys {
  return {
    input: (cluster) => `${prefix}:input:${cluster}`,
    inputVersion: (cluster) => `${prefix}:input-version:${cluster}`,
    output: (cluster) => `${prefix}:output:${cluster}`,
    inputChannel: `${prefix}:input-changed`,
  };
}

/** A snapshot read back from Redis, with the replica that wrote it. */
export interface Decoded<T> {
  readonly snapshot: T;
  readonly replica: string;
}

export function encodeInput(snapshot: InputSnapshot, replica: string): string {
  const header = {
    format: VALUE_FORMAT,
    cluster: snapshot.cluster,
    epoch: snapshot.epoch,
    generation: snapshot.generation,
    hash: snapshot.hash,
    replica,
  };
  return withResources(header, snapshotEncoding(snapshot));
}

export function encodeOutput(snapshot: OutputSnapshot, replica: string): string {
  const header = {
    format: VALUE_FORMAT,
    cluster: snapshot.cluster,
    hash: snapshot.hash,
    provenance: snapshot.provenance,
    replica,
  };
  return withResources(header, snapshotEncoding(snapshot));
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
export function decodeInput(raw: string, cluster: string): Decoded<InputSnapshot> {
  const value = parseValue(raw, cluster);
  const { epoch, generation } = value;
  if (typeof epoch !== 'string' || typeof generation !== 'number' || !Number.isSafeInteger(generation)) {
    throw undecodable(cluster, 'epoch or generation missing or malformed');
  }
  const snapshot = rebuild(cluster, () => buildInputSnapshot({ cluster, epoch, generation, resources: resourcesOf(value) }));
  checkHash(snapshot.hash, value.hash, cluster);
  return { snapshot, replica: replicaOf(value) };
}

/** As decodeInput, for an output value (provenance included). */
export function decodeOutput(raw: string, cluster: string): Decoded<OutputSnapshot> {
  const value = parseValue(raw, cluster);
  const provenance = provenanceOf(value.provenance, cluster);
  const snapshot = rebuild(cluster, () => buildOutputSnapshot({ cluster, provenance, resources: resourcesOf(value) }));
  checkHash(snapshot.hash, value.hash, cluster);
  return { snapshot, replica: replicaOf(value) };
}

function parseValue(raw: string, cluster: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw undecodable(cluster, 'not JSON', err);
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

function provenanceOf(value: unknown, cluster: string): readonly Provenance[] {
  if (!Array.isArray(value)) throw undecodable(cluster, 'provenance missing');
  return value.map((p: unknown) => {
    if (!isRecord(p) || typeof p.cluster !== 'string' || typeof p.inputHash !== 'string') {
      throw undecodable(cluster, 'a provenance entry is malformed');
    }
    return copyProvenance({
      cluster: p.cluster,
      inputHash: p.inputHash,
      stale: p.stale === true,
      ...(typeof p.epoch === 'string' && typeof p.generation === 'number' ? { epoch: p.epoch, generation: p.generation } : {}),
    });
  });
}

function replicaOf(value: Record<string, unknown>): string {
  return typeof value.replica === 'string' ? value.replica : '';
}

function rebuild<T>(cluster: string, build: () => T): T {
  try {
    return build();
  } catch (err) {
    throw undecodable(cluster, err instanceof Error ? err.message : String(err), err);
  }
}

function checkHash(actual: string, stored: unknown, cluster: string): void {
  if (actual !== stored) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
      `stored snapshot of cluster ${cluster} declares hash ${String(stored)} but its resources hash to ${actual}`,
    );
  }
}

function undecodable(cluster: string, reason: string, cause?: unknown): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', `stored snapshot of cluster ${cluster} is undecodable: ${reason}`, { cause });
}
