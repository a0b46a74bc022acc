import { createHash } from 'node:crypto';
import { canonicalJson, deepFreeze } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { compareResources, formatResourceKey, resourceKey, type Resource } from './resource.ts';

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
 * Sorts, freezes and encodes a resource list canonically.
 * Throws MESHRELAY_ERR_INVALID_RESOURCE when two resources share a key.
 * Does not mutate its argument (resources are deep-copied through the encoding).
 */
export function encodeResources(resources: readonly Resource[]): EncodedResources {
  const copies = resources.map((r) => JSON.parse(canonicalJson(r)) as Resource).sort(compareResources);
  for (let i = 1; i < copies.length; i++) {
    const prev = copies[i - 1] as Resource;
    const cur = copies[i] as Resource;
    if (compareResources(prev, cur) === 0) {
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_RESOURCE', `duplicate resource ${formatResourceKey(resourceKey(cur))}`);
    }
  }
  const encoding = canonicalJson(copies);
  return { resources: deepFreeze(copies), encoding, hash: sha256Hex(encoding) };
}

export interface InputSnapshotInit {
  readonly cluster: string;
  readonly epoch: string;
  readonly generation: number;
  readonly resources: readonly Resource[];
}

export function buildInputSnapshot(init: InputSnapshotInit): InputSnapshot {
  const encoded = encodeResources(init.resources);
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

export function buildOutputSnapshot(init: OutputSnapshotInit): OutputSnapshot {
  const encoded = encodeResources(init.resources);
  const provenance = [...init.provenance]
    .map(copyProvenance)
    .sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  return Object.freeze({
    cluster: init.cluster,
    hash: encoded.hash,
    bytes: Buffer.byteLength(encoded.encoding),
    resources: encoded.resources,
    provenance: deepFreeze(provenance),
  });
}

/** The canonical encoding of a snapshot's resources (what `hash` is computed over). */
export function snapshotEncoding(snapshot: { readonly resources: readonly Resource[] }): string {
  return canonicalJson(snapshot.resources);
}
