/**
 * What `cluster register` and `cluster rotate-token` hand an operator: the
 * relay address, the token (shown once), the root CA, optional files holding
 * them, and the agent command line that uses those files.
 */
import { constants } from 'node:fs';
import { access, chmod, open, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { MeshrelayError } from '@meshrelay/api';
import type { RelayEndpoint } from '../api-types.ts';
import { usageError } from '../cli-context.ts';
import { shellQuote } from '../format.ts';

export interface CredentialFiles {
  /** Where the token goes (mode 0600). */
  readonly tokenOut?: string | undefined;
  /** Where the root CA bundle goes. */
  readonly caOut?: string | undefined;
}

/** The files that were actually written, as absolute paths. */
export interface WrittenFiles {
  readonly tokenFile?: string;
  readonly caFile?: string;
}

/**
 * Checks, before the server is called, that each requested file can be written:
 * its directory exists and is writable, and it is not a directory. Throws a usage error.
 */
export async function checkCredentialFiles(files: CredentialFiles): Promise<void> {
  const requested: [string, string | undefined][] = [
    ['--token-out', files.tokenOut],
    ['--ca-out', files.caOut],
  ];
  for (const [flag, path] of requested) {
    if (path === undefined) continue;
    if (path.trim() === '') throw usageError(`${flag} must not be empty`);
    const full = resolve(path);
    const existing = await stat(full).catch(() => undefined);
    if (existing?.isDirectory()) throw usageError(`${flag}: "${path}" is a directory, not a file`);
    try {
      await access(existing ? full : dirname(full), constants.W_OK);
    } catch {
      throw usageError(
        `${flag}: cannot write "${path}": ${existing ? 'the file is not writable' : `directory "${dirname(full)}" does not exist or is not writable`}`,
      );
    }
  }
  if (files.tokenOut !== undefined && files.caOut !== undefined && resolve(files.tokenOut) === resolve(files.caOut)) {
    throw usageError('--token-out and --ca-out must name different files');
  }
}

/** What writeCredentialFiles did: the files written, and the first failure (later files are not attempted). */
export interface WriteOutcome {
  readonly written: WrittenFiles;
  readonly failure?: MeshrelayError;
}

/**
 * Writes the token (mode 0600, set before the secret goes in, also when the file
 * existed), then the CA bundle. Never throws: a failure (MESHRELAY_ERR_INTERNAL
 * naming the file) is returned so the caller can still show the token it holds.
 */
export async function writeCredentialFiles(
  files: CredentialFiles,
  token: string,
  relay: RelayEndpoint,
): Promise<WriteOutcome> {
  const written: { tokenFile?: string; caFile?: string } = {};
  try {
    if (files.tokenOut !== undefined) {
      const path = resolve(files.tokenOut);
      await guard(path, async () => {
        const handle = await open(path, 'w', 0o600);
        try {
          await handle.chmod(0o600);
          await handle.writeFile(token);
        } finally {
          await handle.close();
        }
      });
      written.tokenFile = path;
    }
    if (files.caOut !== undefined) {
      const path = resolve(files.caOut);
      await guard(path, async () => {
        await writeFile(path, relay.caBundlePem, { mode: 0o644 });
        await chmod(path, 0o644);
      });
      written.caFile = path;
    }
  } catch (err) {
    return { written, failure: err as MeshrelayError };
  }
  return { written };
}

async function guard(path: string, write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `cannot write "${path}": ${reason}`, { cause: err });
  }
}

/**
 * The `meshrelay-agent` command line for a cluster; placeholders in <angle brackets> stand for files not written here.
 */
export function agentCommandLine(cluster: string, relay: RelayEndpoint, written: WrittenFiles): string {
  const word = (path: string | undefined, placeholder: string): string =>
    path === undefined ? placeholder : shellQuote(path);
  return [
    'npx meshrelay-agent',
    `--cluster ${shellQuote(cluster)}`,
    `--server-address ${shellQuote(relay.address)}`,
    `--token-file ${word(written.tokenFile, '<token-file>')}`,
    `--root-ca-file ${word(written.caFile, '<root-ca-file>')}`,
    '--manifests-dir <manifests-dir>',
    '--output-dir <output-dir>',
    '--state-dir <state-dir>',
  ].join(' ');
}

interface CredentialsText {
  readonly heading: string;
  readonly cluster: string;
  readonly token: string;
  readonly tokenExpiresAt: string;
  readonly relay: RelayEndpoint;
  readonly written: WrittenFiles;
}

/** The text an operator copies into the agent's installation. */
export function renderCredentials(c: CredentialsText): string {
  const lines = [
    c.heading,
    '',
    `Relay server address:  ${c.relay.address}`,
    `Relay identity token:  ${c.token}`,
    `Token expires at:      ${c.tokenExpiresAt}`,
    'The token is shown only now: the server keeps only its hash.',
  ];
  if (c.written.tokenFile !== undefined) lines.push(`Token written to:      ${c.written.tokenFile} (mode 0600)`);
  if (c.written.caFile !== undefined) lines.push(`Root CA written to:    ${c.written.caFile}`);
  lines.push('', 'Relay root CA bundle:', c.relay.caBundlePem.trimEnd(), '');
  const missing = [
    ...(c.written.tokenFile === undefined ? ['the token to <token-file> (mode 0600)'] : []),
    ...(c.written.caFile === undefined ? ['the CA bundle to <root-ca-file>'] : []),
  ];
  if (missing.length > 0)
    lines.push(`Save ${missing.join(' and ')}, then run the relay agent in cluster "${c.cluster}":`);
  else lines.push(`Run the relay agent in cluster "${c.cluster}":`);
  lines.push(`  ${agentCommandLine(c.cluster, c.relay, c.written)}`);
  return lines.join('\n') + '\n';
}
