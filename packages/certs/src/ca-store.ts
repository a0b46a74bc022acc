import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { MeshrelayError } from '@meshrelay/api';
import { assertCaBundle, createRootCa, type CaBundle } from './ca.ts';
import { errorMessage } from './x509.ts';

/**
 * Durable home of the relay root CA, shared by every management replica.
 * Implementations must make createIfAbsent atomic across processes and machines that share it.
 */
export interface CaStore {
  /** The stored bundle, or undefined if none was ever stored. Throws if what is stored is unreadable. */
  load(): Promise<CaBundle | undefined>;
  /**
   * Stores `bundle` only if no bundle is stored yet, and returns the stored one: the caller's if
   * it won, otherwise the winner's. Never overwrites.
   */
  createIfAbsent(bundle: CaBundle): Promise<CaBundle>;
}

export const CA_FILE_NAME = 'relay-root-ca.json';

/**
 * A CaStore in a local state directory: `relay-root-ca.json` ({certPem, keyPem}, mode 0600).
 * Atomic create-if-absent by writing a complete temp file and hard-linking it to the final name:
 * link(2) fails with EEXIST if the name exists, so exactly one writer wins and no reader ever sees
 * a partial file.
 */
export class FileCaStore implements CaStore {
  readonly path: string;
  readonly #dir: string;

  /** `fileName` lets other CAs (the mesh roots) use the same atomic store under their own name. */
  constructor(dir: string, fileName = CA_FILE_NAME) {
    this.#dir = dir;
    this.path = join(dir, fileName);
  }

  async load(): Promise<CaBundle | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `cannot read relay CA file ${this.path}: ${errorMessage(err)}`,
        { cause: err },
      );
    }
    return parseStoredBundle(text, this.path);
  }

  async createIfAbsent(bundle: CaBundle): Promise<CaBundle> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const temp = `${this.path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeDurably(temp, JSON.stringify({ certPem: bundle.certPem, keyPem: bundle.keyPem }));
      try {
        await link(temp, this.path);
        await syncDirectory(this.#dir);
        return bundle;
      } catch (err) {
        if (!isErrno(err, 'EEXIST')) throw err;
      }
      const winner = await this.load();
      if (winner === undefined)
        throw new MeshrelayError(
          'MESHRELAY_ERR_INTERNAL',
          `relay CA file ${this.path} vanished while it was being created`,
        );
      return winner;
    } finally {
      await unlink(temp).catch(() => undefined);
    }
  }
}

export interface EnsureCaOptions {
  readonly commonName: string;
  readonly now: Date;
  readonly validityDays?: number;
}

/**
 * Returns the relay root CA, creating it the first time. Every replica that calls this with the
 * same store gets the same CA, also when several start at once. A stored CA that cannot be read
 * is an error (never silently replaced: that would orphan every issued certificate).
 */
export async function ensureRelayCa(store: CaStore, options: EnsureCaOptions): Promise<CaBundle> {
  const existing = await store.load();
  if (existing !== undefined) return existing;
  return store.createIfAbsent(createRootCa(options));
}

function parseStoredBundle(text: string, path: string): CaBundle {
  const source = `relay CA file ${path} is corrupt (refusing to create a new CA; restore the file or remove it to start a new trust root)`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `${source}: not JSON (${errorMessage(err)})`, { cause: err });
  }
  const record = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const { certPem, keyPem } = record;
  if (typeof certPem !== 'string' || typeof keyPem !== 'string') {
    throw new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `${source}: expected string fields certPem and keyPem`);
  }
  const bundle = { certPem, keyPem };
  assertCaBundle(bundle, source);
  return bundle;
}

async function writeDurably(path: string, content: string): Promise<void> {
  const handle = await open(path, 'wx', 0o600);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
}

// Makes the new directory entry survive a crash; some file systems refuse to fsync a directory.
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync().catch(() => undefined);
  } finally {
    await handle.close();
  }
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}
