import type { relay } from './gen/relay.js';
import type { ResourcePatch } from './resource-patch.ts';

/** What a delta header names beyond a full one: the base it applies to, its payload hash, the keys it deletes. */
export interface DeltaHeader {
  readonly baseHash: string;
  /** sha256 of the upserts' canonical encoding (the chunks' payload). */
  readonly payloadHash: string;
  readonly deletedKeys: readonly string[];
  /** Resources of the base changed in place (only to a receiver that takes patches). */
  readonly patches?: readonly ResourcePatch[];
  /**
   * Set when the header's provenance lists only the entries that changed against the base's
   * (only to a receiver that takes patches): the clusters whose entry is gone and the hash of
   * the whole resulting list (see provenance-delta.ts).
   */
  readonly provenance?: {
    readonly removed: readonly string[];
    readonly hash: string;
    readonly epochOfBase?: readonly string[];
  };
}

/** What a delta costs against the snapshot size limit: its payload plus its deleted keys and patches. */
export function deltaBytes(
  payload: string,
  deletedKeys: readonly string[],
  patches: readonly ResourcePatch[] = [],
): number {
  const keys = deletedKeys.reduce((n, k) => n + Buffer.byteLength(k), 0);
  return (
    Buffer.byteLength(payload) +
    keys +
    patches.reduce((n, p) => n + Buffer.byteLength(p.key) + Buffer.byteLength(p.ops), 0)
  );
}

/** The delta a header announces, or undefined for a full snapshot. */
export function deltaOfHeader(header: relay.v1.ISnapshotHeader): DeltaHeader | undefined {
  if (!header.baseHash) return undefined;
  const patches = (header.patches ?? []).map((p) => ({ key: p.key ?? '', ops: p.ops ?? '' }));
  return {
    baseHash: header.baseHash,
    payloadHash: header.payloadHash ?? '',
    deletedKeys: [...(header.deletedKeys ?? [])],
    ...(patches.length > 0 ? { patches } : {}),
    ...(header.provenanceRelative === true ? { provenance: relativeProvenanceOfHeader(header) } : {}),
  };
}

function relativeProvenanceOfHeader(header: relay.v1.ISnapshotHeader): NonNullable<DeltaHeader['provenance']> {
  const epochOfBase = (header.provenance ?? []).filter((p) => p.epochOfBase === true).map((p) => p.cluster ?? '');
  return {
    removed: [...(header.provenanceRemoved ?? [])],
    hash: header.provenanceHash ?? '',
    ...(epochOfBase.length > 0 ? { epochOfBase } : {}),
  };
}

/** The header fields of a delta (SnapshotHeader 8-14; a relative provenance's epochOfBase rides on its entries). */
export function deltaHeaderFields(delta: DeltaHeader): relay.v1.ISnapshotHeader {
  return {
    baseHash: delta.baseHash,
    payloadHash: delta.payloadHash,
    deletedKeys: [...delta.deletedKeys],
    ...(delta.patches && delta.patches.length > 0
      ? { patches: delta.patches.map((p) => ({ key: p.key, ops: p.ops })) }
      : {}),
    ...(delta.provenance
      ? {
          provenanceRelative: true,
          provenanceRemoved: [...delta.provenance.removed],
          provenanceHash: delta.provenance.hash,
        }
      : {}),
  };
}
