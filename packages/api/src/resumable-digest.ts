/**
 * The hash and size of a sorted list of canonical resources' encoding (`[` + their encodings
 * joined by `,` + `]`: what a snapshot's `hash` and `bytes` describe), computed in pieces and
 * with checkpoints of the hash state along the way. A later list that starts with the same
 * resources (the same frozen objects) resumes from the last checkpoint before its first
 * difference instead of hashing its whole encoding again: at tier M an output is ~7 MiB of
 * text, and a change rebuilds it around one ServiceEntry.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Resource } from './resource.ts';

/** Characters of encoding gathered before they are fed to the hash (one update per resource costs more than the hashing). */
const PIECE_CHARS = 64 * 1024;
/** Bytes hashed between two checkpoints. */
const CHECKPOINT_BYTES = 256 * 1024;

interface Checkpoint {
  /** The list's first `at` resources are hashed (with `[` and the commas between them). */
  readonly at: number;
  readonly bytes: number;
  readonly state: Hash;
}

/** Checkpoints of the lists digested so far, by list (a frozen snapshot's resources). */
const checkpointsOf = new WeakMap<readonly Resource[], readonly Checkpoint[]>();

export interface ListDigest {
  /** sha256 (hex) of the encoding. */
  readonly hash: string;
  /** Its size in bytes (UTF-8). */
  readonly bytes: number;
}

/**
 * Pieces at least this long are fed to the hash as they are, not gathered with others first:
 * gathering copies them into a new string, while a call per piece costs less than that copy.
 */
const DIRECT_CHARS = 2 * 1024;

/**
 * The digest of `resources`' encoding, `pieces` appending each resource's in pieces (see
 * `resourceEncodingPieces`: strings, and the UTF-8 bytes of shared parts, read where they are
 * instead of flattened into a copy). `previous`, when given, is a list digested before whose
 * checkpoints may be resumed from. Both lists must be frozen lists of canonical resources (the
 * same object stands for the same encoding).
 */
export function digestResourceList(resources: readonly Resource[], pieces: (r: Resource, out: (string | Uint8Array)[]) => void, previous?: readonly Resource[]): ListDigest {
  const kept: Checkpoint[] = [];
  let start: Checkpoint | undefined;
  const earlier = previous === undefined ? undefined : checkpointsOf.get(previous);
  if (previous !== undefined && earlier !== undefined) {
    const limit = Math.min(previous.length, resources.length);
    let same = 0;
    while (same < limit && previous[same] === resources[same]) same++;
    for (const checkpoint of earlier) {
      if (checkpoint.at > same) break;
      kept.push(checkpoint);
      start = checkpoint;
    }
  }
  const hash = start ? start.state.copy() : createHash('sha256');
  let bytes = start?.bytes ?? 0;
  let piece = start ? '' : '[';
  let sinceCheckpoint = 0;
  const feed = (text: string | Uint8Array): void => {
    hash.update(text);
    const size = typeof text === 'string' ? Buffer.byteLength(text) : text.length;
    bytes += size;
    sinceCheckpoint += size;
  };
  const out: (string | Uint8Array)[] = [];
  for (let i = start?.at ?? 0; i < resources.length; i++) {
    if (i > 0) piece += ',';
    out.length = 0;
    pieces(resources[i] as Resource, out);
    for (const text of out) {
      if (typeof text === 'string' && text.length < DIRECT_CHARS) {
        piece += text;
        continue;
      }
      if (piece !== '') feed(piece);
      piece = '';
      feed(text);
    }
    // A checkpoint is the state after whole resources: what is gathered is fed first.
    if (piece.length >= PIECE_CHARS || (sinceCheckpoint >= CHECKPOINT_BYTES && piece !== '')) {
      feed(piece);
      piece = '';
    }
    if (sinceCheckpoint >= CHECKPOINT_BYTES) {
      kept.push({ at: i + 1, bytes, state: hash.copy() });
      sinceCheckpoint = 0;
    }
  }
  piece += ']';
  hash.update(piece);
  bytes += Buffer.byteLength(piece);
  checkpointsOf.set(resources, kept);
  return { hash: hash.digest('hex'), bytes };
}

/** How many checkpoints the digest of `resources` kept (for tests: a resumed digest starts at one). */
export function checkpointCount(resources: readonly Resource[]): number {
  return checkpointsOf.get(resources)?.length ?? 0;
}
