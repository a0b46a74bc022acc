/**
 * meshctl against a real management server: the server runs in this process, so a test can
 * set up state the CLI then reads (held outputs, snapshots). meshctl itself reaches it only over
 * HTTP; the meshctl package never imports the server.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import { parseServerConfig, startManagementServer, type ManagementServer } from '@meshrelay/mgmt-server';
import { CREDENTIAL_ENVS } from '../../packages/meshctl/test/harness.ts';

export * from '../../packages/meshctl/test/harness.ts';

export interface RunningServer {
  readonly server: ManagementServer;
  /** Base URL of its HTTP API. */
  readonly url: string;
  /** Its state directory, where it keeps its admin token. */
  readonly stateDir: string;
}

/** Lets meshctlAt find the admin token of `server` (answering at `url`); forgotten after the test. */
export function rememberServer(t: TestContext, url: string, server: ManagementServer, stateDir: string): void {
  const inStateDir = server.admin.location === join(stateDir, 'admin-token');
  CREDENTIAL_ENVS.set(
    url,
    inStateDir ? { MESHRELAY_STATE_DIR: stateDir } : { MESHRELAY_ADMIN_TOKEN: server.admin.token },
  );
  t.after(() => CREDENTIAL_ENVS.delete(url));
}

/** Starts a management server with its state in a fresh directory; stopped and removed after the test. */
export async function startServer(t: TestContext, extraFlags: readonly string[] = []): Promise<RunningServer> {
  // Not tempDir: its removal would run before this server's stop, while the server may still be
  // writing a kept contribution into its state dir. One hook stops the server, then removes the dir.
  const dir = await mkdtemp(join(tmpdir(), 'meshctl-test-'));
  const stateDir = join(dir, 'state');
  const flags = [
    '--relay-host',
    '127.0.0.1',
    '--relay-port',
    '0',
    '--http-host',
    '127.0.0.1',
    '--http-port',
    '0',
    '--metrics-port',
    '0',
    '--state-dir',
    stateDir,
    '--replica-name',
    'meshctl-test',
    '--log-level',
    'silent',
    ...extraFlags,
  ];
  let server: ManagementServer;
  try {
    server = await startManagementServer(parseServerConfig(flags, {}), pino({ level: 'silent' }));
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const url = `http://127.0.0.1:${server.httpPort}`;
  t.after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  });
  rememberServer(t, url, server, stateDir);
  return { server, url, stateDir };
}

/** GET of an API path with the server's admin token; rejects on a non-2xx answer. */
export async function apiGet<T>(running: RunningServer, path: string): Promise<T> {
  const res = await fetch(`${running.url}${path}`, {
    headers: { authorization: `Bearer ${running.server.admin.token}` },
  });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}
