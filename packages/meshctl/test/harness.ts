/** Test harness: a real management server on free ports, and meshctl run in-process. */
import { mkdtempSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import { parseServerConfig, startManagementServer, type ManagementServer } from '@meshrelay/mgmt-server';
import { runMeshctl } from '../src/index.ts';

export interface RunningServer {
  readonly server: ManagementServer;
  /** Base URL of its HTTP API. */
  readonly url: string;
  /** Its state directory, where it keeps its admin token. */
  readonly stateDir: string;
}

/**
 * How meshctlAt finds the admin token of a server this process started, by URL: its state
 * directory (as on the server's machine), or the token itself when it is kept elsewhere.
 */
const CREDENTIAL_ENVS = new Map<string, Record<string, string>>();

/** A token for calls that never reach a server (nothing listening, usage errors). */
export const UNUSED_TOKEN_ENV: Readonly<Record<string, string>> = { MESHRELAY_ADMIN_TOKEN: 'token-for-a-server-that-is-not-there' };

/** Lets meshctlAt find the admin token of `server` (answering at `url`); forgotten after the test. */
export function rememberServer(t: TestContext, url: string, server: ManagementServer, stateDir: string): void {
  const inStateDir = server.admin.location === join(stateDir, 'admin-token');
  CREDENTIAL_ENVS.set(url, inStateDir ? { MESHRELAY_STATE_DIR: stateDir } : { MESHRELAY_ADMIN_TOKEN: server.admin.token });
  t.after(() => CREDENTIAL_ENVS.delete(url));
}
/** An empty working directory for in-process meshctl runs: no local run's state is found by accident. */
const EMPTY_CWD = mkdtempSync(join(tmpdir(), 'meshctl-cwd-'));

/** Starts a management server with its state in a fresh directory; stopped and removed after the test. */
export async function startServer(t: TestContext, extraFlags: readonly string[] = []): Promise<RunningServer> {
  const dir = await tempDir(t);
  const flags = [
    '--relay-host', '127.0.0.1', '--relay-port', '0',
    '--http-host', '127.0.0.1', '--http-port', '0', '--metrics-port', '0',
    '--state-dir', join(dir, 'state'), '--replica-name', 'meshctl-test', '--log-level', 'silent',
    ...extraFlags,
  ];
  const server = await startManagementServer(parseServerConfig(flags, {}), pino({ level: 'silent' }));
  const url = `http://127.0.0.1:${server.httpPort}`;
  const stateDir = join(dir, 'state');
  t.after(() => server.stop());
  rememberServer(t, url, server, stateDir);
  return { server, url, stateDir };
}

/** GET of an API path with the server's admin token; rejects on a non-2xx answer. */
export async function apiGet<T>(running: RunningServer, path: string): Promise<T> {
  const res = await fetch(`${running.url}${path}`, { headers: { authorization: `Bearer ${running.server.admin.token}` } });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'meshctl-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface MeshctlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs meshctl in this process with only the given environment variables, in an empty working directory unless `cwd` is given. */
export async function meshctl(args: readonly string[], env: Record<string, string> = {}, cwd = EMPTY_CWD): Promise<MeshctlResult> {
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
 * process started, meshctl finds its admin token as an operator's would (see rememberServer);
 * flags in `args` and variables in `env` win.
 */
export function meshctlAt(url: string, args: readonly string[], env: Record<string, string> = {}): Promise<MeshctlResult> {
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
