// Plane-wide state that every management replica must see (DESIGN §4 fencing, §6 held outputs,
// §13 carried contributions) lives in named documents of one small interface, with two backends:
// the state directory (`--registry file`: replicas share it on one machine or a shared volume) and
// ConfigMaps in the management namespace (`--registry kubernetes`: each pod has its own disk).

import { MeshrelayError } from '@meshrelay/api';

/**
 * A document's body: its bytes, or its text in pieces, UTF-8 encoded when written (a large body
 * made a piece at a time, so neither it nor its maker holds one multi-MB string or buffer, and
 * the writer need not allocate a buffer per piece).
 */
export type DocumentBody = Buffer | AsyncIterable<string>;

/** The whole of a body, as one buffer. */
export async function documentBytes(body: DocumentBody): Promise<Buffer> {
  if (Buffer.isBuffer(body)) return body;
  const pieces: string[] = [];
  for await (const piece of body) pieces.push(piece);
  return Buffer.from(pieces.join(''));
}

/** A document's name and an opaque revision that changes on every write of it. */
export interface DocumentRevision {
  readonly name: string;
  readonly revision: string;
}

/**
 * A collection of named documents (bodies are bytes) shared by every replica.
 * Contract of both implementations:
 *  - `put` is atomic and last-write-wins: a concurrent reader gets the old or the new body whole,
 *    never a mix; of two concurrent writers, the body written last stays.
 *  - `get` reads from the backend (no cache), so it sees every write that completed before it.
 *  - `watch` reports names added, changed or removed; it may report a name that did not change
 *    and may coalesce several writes into one report (callers re-read with `get`).
 * Safe to call concurrently from one process; returned buffers belong to the caller.
 */
export interface SharedDocumentStore {
  /** Where the documents live, for logs and errors. */
  readonly location: string;
  put(name: string, body: DocumentBody): Promise<void>;
  /** The body, or undefined when there is no such document. */
  get(name: string): Promise<Buffer | undefined>;
  list(): Promise<DocumentRevision[]>;
  /** Removes the document; removing an absent one is not an error. */
  delete(name: string): Promise<void>;
  /**
   * Calls `onChange` with the names that changed since the previous look, every `intervalMs`
   * (the first look reports every existing name). `onError` gets failed looks; watching goes on.
   * Returns a function that stops watching.
   */
  watch(onChange: (names: string[]) => void, intervalMs: number, onError: (err: unknown) => void): () => void;
}

const SEGMENT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const NAME = new RegExp(`^${SEGMENT}(\\.${SEGMENT})*$`);
const MAX_NAME = 200;

/** Document names are lower-case DNS-style (cluster names plus a suffix), safe as file and object names. */
export function assertDocumentName(name: string): void {
  if (name.length > MAX_NAME || !NAME.test(name)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `shared document name "${name}" must be dot-separated DNS labels (lower-case letters, digits, "-"), at most ${MAX_NAME} characters`,
    );
  }
}

/**
 * The watch of both backends: polls `list()` and reports differences in revisions. Looks never
 * overlap (a slow backend delays the next look instead of piling requests up).
 */
export function pollDocumentChanges(
  list: () => Promise<DocumentRevision[]>,
  onChange: (names: string[]) => void,
  intervalMs: number,
  onError: (err: unknown) => void,
): () => void {
  let known = new Map<string, string>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const look = async (): Promise<void> => {
    try {
      const now = new Map((await list()).map((d) => [d.name, d.revision]));
      const changed = [...now].filter(([name, revision]) => known.get(name) !== revision).map(([name]) => name);
      for (const name of known.keys()) if (!now.has(name)) changed.push(name);
      known = now;
      if (!stopped && changed.length > 0) onChange(changed);
    } catch (err) {
      if (!stopped) onError(err);
    }
    if (!stopped) {
      timer = setTimeout(() => void look(), intervalMs);
      timer.unref();
    }
  };
  void look();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
