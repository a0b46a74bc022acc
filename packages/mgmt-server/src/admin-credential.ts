// The admin credential: the bearer token every /api/v1 call needs (DESIGN §11). Either the operator
// gives it (--admin-token, --admin-token-file) or the server keeps one in its durable state, created
// on first start by whichever replica gets there first.

import { randomBytes } from 'node:crypto';
import { link, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MeshrelayError } from '@meshrelay/api';

export interface AdminCredential {
  readonly token: string;
  /** Where the token lives, for the start-up log and operators; never the value. */
  readonly location: string;
}

/** Name of the credential file in the state directory (file registry). */
export const ADMIN_TOKEN_FILE = 'admin-token';
const MIN_TOKEN_CHARS = 16;
// Visible ASCII only: the token travels in an HTTP header and is pasted by people.
const TOKEN_SHAPE = /^[\x21-\x7e]+$/;

/** Throws MESHRELAY_ERR_INVALID_CONFIG naming `where` when `token` is too short or not header-safe. */
export function assertAdminToken(token: string, where: string): void {
  if (token.length < MIN_TOKEN_CHARS || !TOKEN_SHAPE.test(token)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `${where}: the admin token must be at least ${MIN_TOKEN_CHARS} visible ASCII characters without spaces`,
    );
  }
}

/** 32 random bytes, base64url: 43 characters. */
export function newAdminToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Reads a token file (one line; a trailing newline is ignored) and checks its shape. */
export async function readAdminTokenFile(path: string, what: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `${what} ${path}: cannot read it (${(err as Error).message})`,
      { cause: err },
    );
  }
  const token = text.replace(/\r?\n$/, '');
  assertAdminToken(token, `${what} ${path}`);
  return token;
}

/**
 * The credential in the state directory: `<dir>/admin-token`, mode 0600. Create-if-absent is
 * atomic (a complete file is hard-linked into place, which fails when the name exists), so
 * replicas sharing the directory end with one token: a loser of the race reads the winner's.
 */
export async function ensureFileAdminToken(dir: string): Promise<AdminCredential> {
  const path = join(dir, ADMIN_TOKEN_FILE);
  const existing = await readIfPresent(path);
  if (existing !== undefined) return { token: existing, location: path };
  const temp = join(dir, `.${ADMIN_TOKEN_FILE}.${process.pid}.${randomBytes(6).toString('hex')}`);
  await writeFile(temp, `${newAdminToken()}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(temp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  return { token: await readAdminTokenFile(path, 'admin token file'), location: path };
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    await stat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return readAdminTokenFile(path, 'admin token file');
}
