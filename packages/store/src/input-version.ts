import type { InputSnapshot } from '@meshrelay/api';

/**
 * What identifies a held input snapshot, and its size: enough to answer an agent that resumes
 * by hash, and to record the input's metrics, without reading or decoding the snapshot.
 */
export interface InputVersion {
  readonly epoch: string;
  readonly generation: number;
  readonly hash: string;
  /** Bytes of the canonical encoding. */
  readonly bytes: number;
  readonly resources: number;
}

export function versionOfInput(snapshot: InputSnapshot): InputVersion {
  return {
    epoch: snapshot.epoch,
    generation: snapshot.generation,
    hash: snapshot.hash,
    bytes: snapshot.bytes,
    resources: snapshot.resources.length,
  };
}

/** The `resume` field of an input's version key in Redis. */
export function formatInputVersion(snapshot: InputSnapshot): string {
  const v = versionOfInput(snapshot);
  return JSON.stringify([v.epoch, v.generation, v.hash, v.bytes, v.resources]);
}

/** The field parsed; undefined when it is not exactly what formatInputVersion writes (never guessed). */
export function parseInputVersion(field: string): InputVersion | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(field);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 5) return undefined;
  const [epoch, generation, hash, bytes, resources] = parsed as unknown[];
  if (typeof epoch !== 'string' || typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) return undefined;
  if (![generation, bytes, resources].every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) return undefined;
  return { epoch, generation: generation as number, hash, bytes: bytes as number, resources: resources as number };
}
