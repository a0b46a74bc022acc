import type { relay } from './gen/relay.js';

/** What a delta header names beyond a full one: the base it applies to, its payload hash, the keys it deletes. */
export interface DeltaHeader {
  readonly baseHash: string;
  /** sha256 of the upserts' canonical encoding (the chunks' payload). */
  readonly payloadHash: string;
  readonly deletedKeys: readonly string[];
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
