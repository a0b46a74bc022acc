/**
 * meshctl against a real management server: the server runs in this process, so a test can
 * set up state the CLI then reads (held outputs, snapshots). meshctl itself reaches it only over
 * HTTP; the meshctl package never imports the server.
 */
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import { parseServerConfig, startManagementServer, type ManagementServer } from '@meshrelay/mgmt-server';
import { tempDir } from '../../packages/meshctl/test/harness.ts';

export * from '../../packages/meshctl/test/harness.ts';

export interface RunningServer {
  readonly server: ManagementServer;
  /** Base URL of its HTTP API. */
  readonly url: string;
}

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
  t.after(() => server.stop());
  return { server, url: `http://127.0.0.1:${server.httpPort}` };
}

