import { isRecord, type InputSnapshot } from '@meshrelay/api';
import type { InputChangedEvent } from './snapshot-store.ts';

/** The pub/sub message a replica publishes after it stores or deletes an input in Redis. */
export function formatChangeMessage(cluster: string, hash: string, replica: string, deleted: boolean): string {
  return JSON.stringify({ cluster, hash, replica, deleted });
}

/** Parses a change message; undefined when it is not one. */
export function parseChangeMessage(message: string): InputChangedEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  const { cluster, hash, replica, deleted } = value;
  if (typeof cluster !== 'string' || typeof hash !== 'string' || typeof replica !== 'string' || typeof deleted !== 'boolean') {
    return undefined;
  }
  return Object.freeze({ cluster, hash, replica, deleted });
}

/**
 * Newer-wins between a copy read from Redis and the one memory holds: within one agent epoch the
 * higher generation wins (an equal one changes nothing); across epochs there is no order, and the
 * copy in Redis, written after memory was last in sync, wins.
 */
export function supersedes(remote: InputSnapshot, held: InputSnapshot): boolean {
  return remote.epoch !== held.epoch || remote.generation > held.generation;
}
