/**
 * The hash and size of a sorted list of canonical resources' encoding (`[` + their encodings
 * joined by `,` + `]`: what a snapshot's `hash` and `bytes` describe), computed in pieces and
 * with checkpoints of the hash state along the way. A later list that starts with the same
 * resources (the same frozen objects) resumes from the last checkpoint before its first
 * difference instead of hashing its whole encoding again: an output is megabytes of text, and a
 * change rebuilds it around one ServiceEntry (see docs/design/decisions/README.md#resumable-digest).
 */
import { createHash, type Hash } from 'node:crypto';
import { LoopSlicer } from './loop-slicer.ts';
import type { Resource } from './resource.ts';

/**
 * Characters of encoding gathered before they are fed to the hash (one update per resource costs more than the
 * hashing).
 */
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
export function digestResourceList(
  resources: readonly Resource[],
  pieces: Pieces,
  previous?: readonly Resource[],
): ListDigest {
  const steps = digestSteps(resources, pieces, previous);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * digestResourceList giving the event loop a turn when `slicer` says one is due (a held input is
 * megabytes of text; see docs/design/decisions/README.md#resumable-digest).
 */
export async function digestResourceListInSlices(
  resources: readonly Resource[],
  pieces: Pieces,
  previous?: readonly Resource[],
  slicer = new LoopSlicer(),
): Promise<ListDigest> {
  const steps = digestSteps(resources, pieces, previous);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (slicer.due()) await slicer.yield();
  }
}

/** Appends the canonical encoding of one resource to `out`, in pieces (see `resourceEncodingPieces`). */
type Pieces = (r: Resource, out: (string | Uint8Array)[]) => void;

/**
 * Gives `to` the checkpoints `from` kept that lie within the resources both start with (the same
 * objects): a list rebuilt around the same resources (a copy, or the same list filtered) resumes
 * from them instead of being hashed from its start.
 */
export function carryCheckpoints(from: readonly Resource[], to: readonly Resource[]): void {
  const earlier = checkpointsOf.get(from);
  if (earlier === undefined || from === to) return;
  const same = sharedPrefix(from, to);
  checkpointsOf.set(
    to,
    earlier.filter((c) => c.at <= same),
  );
}

/** How many resources `a` and `b` start with in common (the same objects). */
function sharedPrefix(a: readonly Resource[], b: readonly Resource[]): number {
  const limit = Math.min(a.length, b.length);
  let same = 0;
  while (same < limit && a[same] === b[same]) same++;
  return same;
}

/** The work of digestResourceList, stopping after each piece it feeds to the hash. */
function* digestSteps(
  resources: readonly Resource[],
  pieces: Pieces,
  previous: readonly Resource[] | undefined,
): Generator<undefined, ListDigest> {
  const kept: Checkpoint[] = [];
  let start: Checkpoint | undefined;
  const earlier = previous === undefined ? undefined : checkpointsOf.get(previous);
  if (previous !== undefined && earlier !== undefined) {
    const same = sharedPrefix(previous, resources);
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
      yield;
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
