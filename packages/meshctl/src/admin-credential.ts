// Where meshctl finds the management server's admin credential, in the order operators expect:
// the flag, its variable, a token file (flag, then variable), then the local run's state directory.

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MeshrelayError } from '@meshrelay/api';

export const CREDENTIAL_ENV = {
  token: 'MESHRELAY_ADMIN_TOKEN',
  tokenFile: 'MESHRELAY_ADMIN_TOKEN_FILE',
  stateDir: 'MESHRELAY_STATE_DIR',
} as const;

/** The server's credential file in its state directory (meshrelay-server's `admin-token`). */
export const STATE_DIR_TOKEN_FILE = 'admin-token';
/** Looked in when no state directory is given: `npm start`'s, then meshrelay-server's default. */
export const LOCAL_STATE_DIRS = ['.run/server', '.meshrelay/server'] as const;

export interface AdminCredential {
  readonly token: string;
  /** Where it came from, for messages; never the value. */
  readonly source: string;
}

/** What the command line and environment said, after flag-over-variable merging. */
export interface CredentialInputs {
  readonly token: string | undefined;
  readonly tokenFile: string | undefined;
  /** An explicit state directory (flag or variable); undefined = the local run's defaults. */
  readonly stateDir: string | undefined;
  readonly cwd: string;
  /** The API's base URL: the local run's token is offered only to a server on this machine. */
  readonly server: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

/** Whether `server` names this machine (localhost, 127.0.0.0/8, ::1). */
export function isLoopbackServer(server: string): boolean {
  const host = new URL(server).hostname.toLowerCase();
  return LOOPBACK_HOSTS.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Resolves the credential. Throws MESHRELAY_ERR_INVALID_ARGUMENT for a token file that cannot be
 * read or is empty, and MESHRELAY_ERR_UNAUTHENTICATED naming every way to give one when none is found.
 */
export function resolveAdminCredential(inputs: CredentialInputs): AdminCredential {
  if (inputs.token !== undefined) return { token: inputs.token, source: `--admin-token or ${CREDENTIAL_ENV.token}` };
  if (inputs.tokenFile !== undefined) {
    const path = resolve(inputs.cwd, inputs.tokenFile);
    const token = readToken(path);
    if (token === undefined)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `--admin-token-file (${CREDENTIAL_ENV.tokenFile}): cannot read ${path}`,
      );
    if (token === '')
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `--admin-token-file (${CREDENTIAL_ENV.tokenFile}): ${path} is empty`,
      );
    return { token, source: path };
  }
  // A token found in the local run's directory belongs to the server on this machine: never send it elsewhere.
  const dirs =
    inputs.stateDir !== undefined ? [inputs.stateDir] : isLoopbackServer(inputs.server) ? LOCAL_STATE_DIRS : [];
  const candidates = dirs.map((dir) => join(resolve(inputs.cwd, dir), STATE_DIR_TOKEN_FILE));
  for (const path of candidates) {
    const token = readToken(path);
    if (token !== undefined && token !== '') return { token, source: path };
  }
  throw new MeshrelayError('MESHRELAY_ERR_UNAUTHENTICATED', `no admin token: ${waysToGiveIt(candidates)}`);
}

/** The ways to give meshctl the credential, with the files it looked at. */
export function waysToGiveIt(looked: readonly string[]): string {
  return (
    `pass --admin-token or set ${CREDENTIAL_ENV.token}; or pass --admin-token-file or set ${CREDENTIAL_ENV.tokenFile} to a file holding it ` +
    '(with the kubernetes registry: the Secret meshrelay-admin-token, key token, in the management namespace); ' +
    `or, on the server's machine, pass --state-dir or set ${CREDENTIAL_ENV.stateDir} to the server's state directory ` +
    (looked.length > 0
      ? `(looked for ${looked.join(' and ')})`
      : `(the local run's ${LOCAL_STATE_DIRS.join(' and ')} are read only for a server on this machine)`)
  );
}

function readToken(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}
