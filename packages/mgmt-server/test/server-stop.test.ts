// A stopping replica closes its HTTP API and metrics listeners even when a client holds a
// connection open without ever sending a request (a browser's speculative preconnect does this):
// node:http counts such a connection neither idle nor busy, and the close used to wait on it
// until the client went away. A request in flight still gets its answer.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { parseServerConfig } from '../src/config.ts';
import { closeHttpServer } from '../src/http/close-server.ts';
import { startManagementServer } from '../src/server.ts';

const CLOSE_LIMIT_MS = 20_000;

/** A client that connects and then says nothing; resolves once connected. */
async function silentClient(port: number): Promise<{ socket: Socket; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, closed };
}

/** Rejects with `what` when `p` has not settled within CLOSE_LIMIT_MS (a close that waits for the client). */
function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not finish while a silent client stayed connected`)),
      CLOSE_LIMIT_MS,
    );
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

test(
  'given a silent connection on the API and one on the metrics port, when the server stops, then stop finishes and both are closed',
  { timeout: 60_000 },
  async (t) => {
    const stateDir = mkdtempSync(join(tmpdir(), 'meshrelay-server-stop-'));
    t.after(() => rmSync(stateDir, { recursive: true, force: true }));
    const config = parseServerConfig([
      ...['--relay-host', '127.0.0.1', '--relay-port', '0', '--http-host', '127.0.0.1', '--http-port', '0'],
      ...['--metrics-port', '0', '--state-dir', stateDir, '--safe-start-window', '0', '--replica-name', 'test-0'],
    ]);
    const server = await startManagementServer(config, pino({ level: 'silent' }));
    const api = await silentClient(server.httpPort);
    const metrics = await silentClient(server.metricsPort);
    t.after(() => {
      api.socket.destroy();
      metrics.socket.destroy();
    });

    await within(server.stop(), 'the management server stop');
    await within(Promise.all([api.closed, metrics.closed]), 'closing the silent connections');
  },
);

test(
  'given a request in flight and a silent connection, when the server is closed, then the request is answered and the close finishes',
  { timeout: 60_000 },
  async (t) => {
    let answer: (() => void) | undefined;
    const http = createServer((_req, res) => {
      answer = () => res.end('answered');
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const port = (http.address() as { port: number }).port;
    const silent = await silentClient(port);
    t.after(() => silent.socket.destroy());
    const body = new Promise<string>((resolve, reject) => {
      request({ port, host: '127.0.0.1', path: '/' }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    while (answer === undefined) await new Promise((resolve) => setTimeout(resolve, 10));

    const closing = closeHttpServer(http, () => new Promise<void>((resolve) => http.close(() => resolve())), 5_000);
    answer();
    assert.equal(await body, 'answered');
    await within(closing, 'closeHttpServer');
    await within(silent.closed, 'closing the silent connection');
  },
);
