import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  assertDocumentName,
  pollDocumentChanges,
  type DocumentBody,
  type DocumentRevision,
  type SharedDocumentStore,
} from './shared-documents.ts';

const SUFFIX = '.json';

/**
 * Writes text pieces to a new file, each handed to the file as a string: the UTF-8 copy is made
 * outside the JS heap for the write, not as a Buffer per piece that the garbage collector counts.
 */
async function writePieces(path: string, pieces: AsyncIterable<string>): Promise<void> {
  const file = await open(path, 'wx');
  try {
    for await (const piece of pieces) {
      const { bytesWritten } = await file.write(piece, null, 'utf8');
      // A short write (rare on a local file) goes on from where it stopped, as bytes.
      const bytes = bytesWritten < Buffer.byteLength(piece) ? Buffer.from(piece) : undefined;
      for (let done = bytesWritten; bytes && done < bytes.length;) done += (await file.write(bytes, done)).bytesWritten;
    }
  } finally {
    await file.close();
  }
}

/**
 * Documents as files `<name>.json` in a directory of the state directory. A write goes to a temp
 * file first and is renamed over the document, so readers never see a torn body; the last rename
 * wins. A document's revision is its inode and mtime (a rename always brings a new inode).
 */
export class DirectoryDocumentStore implements SharedDocumentStore {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  get location(): string {
    return `directory ${this.#dir}`;
  }

  async put(name: string, body: DocumentBody): Promise<void> {
    assertDocumentName(name);
    await mkdir(this.#dir, { recursive: true });
    const path = this.#path(name);
    const tmp = `${path}.${randomUUID()}.tmp`;
    try {
      if (Buffer.isBuffer(body)) await writeFile(tmp, body);
      else await writePieces(tmp, body);
      // The document appears whole, by the rename.
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async get(name: string): Promise<Buffer | undefined> {
    assertDocumentName(name);
    try {
      return await readFile(this.#path(name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async list(): Promise<DocumentRevision[]> {
    let files: string[];
    try {
      files = await readdir(this.#dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: DocumentRevision[] = [];
    for (const file of files.filter((f) => f.endsWith(SUFFIX)).sort()) {
      // A document removed between listing and stat is simply not listed.
      const s = await stat(join(this.#dir, file)).catch(() => undefined);
      if (s) out.push({ name: file.slice(0, -SUFFIX.length), revision: `${s.ino}:${s.mtimeMs}:${s.size}` });
    }
    return out;
  }

  async delete(name: string): Promise<void> {
    assertDocumentName(name);
    await rm(this.#path(name), { force: true });
  }

  watch(onChange: (names: string[]) => void, intervalMs: number, onError: (err: unknown) => void): () => void {
    return pollDocumentChanges(() => this.list(), onChange, intervalMs, onError);
  }

  #path(name: string): string {
    return join(this.#dir, `${name}${SUFFIX}`);
  }
}
