// Runs the real openssl binary on PEM text through temporary files.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface OpensslDir {
  /** Writes `text` to a file in the directory and returns its path. */
  file(name: string, text: string): Promise<string>;
  close(): Promise<void>;
}

export async function opensslDir(): Promise<OpensslDir> {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-certs-'));
  return {
    async file(name, text) {
      const path = join(dir, name);
      await writeFile(path, text);
      return path;
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

/** `openssl x509 -noout -text` of a certificate file. */
export async function certText(path: string): Promise<string> {
  const { stdout } = await run('openssl', ['x509', '-noout', '-text', '-in', path]);
  return stdout;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly output: string;
}

/**
 * `openssl verify -x509_strict -CAfile <bundle> [-untrusted <chain>] <leaf>` at `atUnixSeconds`
 * (the certificates' own clock, so the run does not depend on today's date).
 */
export async function verifyStrict(
  bundlePath: string,
  leafPath: string,
  atUnixSeconds: number,
  untrustedPath?: string,
): Promise<VerifyResult> {
  const args = ['verify', '-x509_strict', '-attime', String(atUnixSeconds), '-CAfile', bundlePath];
  if (untrustedPath !== undefined) args.push('-untrusted', untrustedPath);
  args.push(leafPath);
  try {
    const { stdout, stderr } = await run('openssl', args);
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
