import { isRecord, type InputSnapshot } from '@meshrelay/api';
import type { InputChangedEvent } from './snapshot-store.ts';

/**
 * The pub/sub message a replica publishes after it stores or deletes an input in Redis. A stored
 * input's epoch and generation go with its hash: an agent that restarts and pushes the same
 * content changes only its epoch, and provenance (which the split-brain rule compares) names it.
 */
export function formatChangeMessage(
  cluster: string,
  hash: string,
  replica: string,
  deleted: boolean,
  order?: { readonly epoch: string; readonly generation: number },
): string {
  return JSON.stringify({
    cluster,
    hash,
    replica,
    deleted,
    ...(order ? { epoch: order.epoch, generation: order.generation } : {}),
  });
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
  const { cluster, hash, replica, deleted, epoch, generation } = value;
  if (
    typeof cluster !== 'string' ||
    typeof hash !== 'string' ||
    typeof replica !== 'string' ||
    typeof deleted !== 'boolean'
  ) {
    return undefined;
  }
  // A replica of an earlier version sends no order: the event then names the hash alone.
  const ordered = typeof epoch === 'string' && typeof generation === 'number' && Number.isSafeInteger(generation);
  return Object.freeze({ cluster, hash, replica, deleted, ...(ordered ? { epoch, generation } : {}) });
}

/**
 * Newer-wins between a copy read from Redis and the one memory holds: within one agent epoch the
 * higher generation wins (an equal one changes nothing); across epochs there is no order, and the
 * copy in Redis, written after memory was last in sync, wins.
 */
export function supersedes(remote: InputSnapshot, held: InputSnapshot): boolean {
  return remote.epoch !== held.epoch || remote.generation > held.generation;
}

/**
 * Whether a change message names another input than the one memory holds: another hash, or the
 * same content from another agent epoch or generation (which provenance carries).
 */
export function namesOtherInput(event: InputChangedEvent, held: InputSnapshot | undefined): boolean {
  if (held === undefined || held.hash !== event.hash) return true;
  return event.epoch !== undefined && (event.epoch !== held.epoch || event.generation !== held.generation);
}
