/** Test harness: meshctl run in-process, temp dirs, and sockets that never answer. */
import { mkdtempSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { runMeshctl } from '../src/index.ts';

/**
 * How meshctlAt finds the admin token of a server a test started, by URL: its state directory
 * (as on the server's machine), or the token itself when it is kept elsewhere. Filled by the e2e
 * harness, which starts servers; this package's own tests never do.
 */
export const CREDENTIAL_ENVS = new Map<string, Record<string, string>>();

/** A token for calls that never reach a server (nothing listening, usage errors). */
export const UNUSED_TOKEN_ENV: Readonly<Record<string, string>> = {
  MESHRELAY_ADMIN_TOKEN: 'token-for-a-server-that-is-not-there',
};

/** An empty working directory for in-process meshctl runs: no local run's state is found by accident. */
const EMPTY_CWD = mkdtempSync(join(tmpdir(), 'meshctl-cwd-'));

export async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'meshctl-test-'));
  t.after(() => rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  return dir;
}

export interface MeshctlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs meshctl in this process with only the given environment variables, in an empty working directory unless `cwd` is
 * given.
 */
export async function meshctl(
  args: readonly string[],
  env: Record<string, string> = {},
  cwd = EMPTY_CWD,
): Promise<MeshctlResult> {
  let stdout = '';
  let stderr = '';
  const code = await runMeshctl(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env,
    cwd,
  });
  return { code, stdout, stderr };
}

/**
 * meshctl against `url`, asserting nothing: the caller checks code and output. For a server this
 * process started, meshctl finds its admin token as an operator's would (see the e2e harness's rememberServer);
 * flags in `args` and variables in `env` win.
 */
export function meshctlAt(
  url: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<MeshctlResult> {
  return meshctl(['--server', url, ...args], { ...CREDENTIAL_ENVS.get(url), ...env });
}

export interface ConnectionCounter {
  readonly url: string;
  connections(): number;
}

/**
 * A TCP listener that accepts connections, counts them and never answers:
 * proves whether meshctl tried to reach a server, and makes requests time out.
 */
export async function startSilentListener(t: TestContext): Promise<ConnectionCounter> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    count += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, connections: () => count };
}

/** A port nothing listens on: bound, then released. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** The token line of `cluster register` / `rotate-token` text output. */
export function tokenFrom(stdout: string): string {
  const match = /^Relay identity token:\s+(\S+)$/m.exec(stdout);
  if (!match?.[1]) throw new Error(`no token line in:\n${stdout}`);
  return match[1];
}
