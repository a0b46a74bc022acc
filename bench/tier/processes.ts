/**
 * Process plumbing shared by the benches that run a real `meshrelay-server` child process: start
 * it, wait for /healthz, register clusters through the HTTP API, scrape /metrics, stop children.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { MeshrelayError } from '@meshrelay/api';
import { freePort } from '@meshrelay/testkit';

const ROOT = resolve(import.meta.dirname, '../..');
export const SERVER_BIN = join(ROOT, 'packages/mgmt-server/bin/meshrelay-server.js');

export interface ServerPorts {
  readonly relayPort: number;
  readonly httpPort: number;
  readonly metricsPort: number;
}

export async function freeServerPorts(): Promise<ServerPorts> {
  return { relayPort: await freePort(), httpPort: await freePort(), metricsPort: await freePort() };
}

/** Flags every bench server gets: loopback ports, its own state dir, a known admin token. */
export function serverArgs(
  ports: ServerPorts,
  stateDir: string,
  adminToken: string,
  extra: readonly string[] = [],
): string[] {
  return [
    '--relay-host',
    '127.0.0.1',
    '--relay-port',
    String(ports.relayPort),
    '--http-port',
    String(ports.httpPort),
    '--metrics-port',
    String(ports.metricsPort),
    '--state-dir',
    stateDir,
    '--admin-token',
    adminToken,
    ...extra,
  ];
}

export interface ServerProcess {
  readonly proc: ChildProcess;
  /** Unix ms of every "relay session admitted" log line. */
  readonly admittedAt: number[];
  /** How the process ended, once it has (e.g. "exited with 134 (JavaScript heap out of memory)"). */
  ended: string | undefined;
}

/**
 * Spawns the server binary; its JSON log lines are read for admissions, stderr is passed through and watched for V8's
 * out-of-memory report.
 */
export function startServerProcess(args: readonly string[]): ServerProcess {
  // BENCH_SERVER_NODE_ARGS (e.g. "--inspect=127.0.0.1:9339") goes to the server's node only, to profile it during a
  // run.
  const nodeArgs = (process.env['BENCH_SERVER_NODE_ARGS'] ?? '').split(/\s+/).filter(Boolean);
  const proc = spawn(process.execPath, [...nodeArgs, SERVER_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const server: ServerProcess = { proc, admittedAt: [], ended: undefined };
  let outOfMemory = false;
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    // The server's log lines (warnings and errors at the bench's default level) go to the bench's stderr.
    if (/^\{"level":[3-6]\d/.test(line)) process.stderr.write(`meshrelay-server: ${line}\n`);
    if (!line.includes('relay session admitted')) return;
    server.admittedAt.push(Number((JSON.parse(line) as { time: number }).time));
  });
  createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', (line) => {
    if (line.includes('JavaScript heap out of memory')) outOfMemory = true;
    process.stderr.write(`${line}\n`);
  });
  proc.once(
    'exit',
    (code, signal) =>
      (server.ended = `exited with ${code ?? signal}${outOfMemory ? ' (JavaScript heap out of memory)' : ''}`),
  );
  return server;
}

/**
 * Polls /healthz until it answers 200; returns the Unix ms it did. Throws past the deadline or if the process exits.
 */
export async function waitHealthy(server: ServerProcess, httpPort: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.proc.exitCode !== null || server.proc.signalCode !== null) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        `meshrelay-server exited (${server.proc.exitCode ?? server.proc.signalCode}) before /healthz answered`,
      );
    }
    try {
      if ((await fetch(`http://127.0.0.1:${httpPort}/healthz`)).ok) return Date.now();
    } catch {
      // not listening yet
    }
    await sleep(20);
  }
  throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `meshrelay-server did not answer /healthz within ${timeoutMs} ms`);
}

export interface RegisteredCluster {
  readonly name: string;
  readonly token: string;
}

/** Registers each cluster with POST /api/v1/clusters; returns their relay tokens and the relay CA bundle. */
export async function registerClusters(
  httpPort: number,
  adminToken: string,
  names: readonly string[],
): Promise<{ clusters: RegisteredCluster[]; caPem: string }> {
  const clusters: RegisteredCluster[] = [];
  let caPem = '';
  for (const name of names) {
    const res = await fetch(`http://127.0.0.1:${httpPort}/api/v1/clusters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ name }),
    });
    if (res.status !== 201)
      throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `registering ${name}: HTTP ${res.status} ${await res.text()}`);
    const reg = (await res.json()) as { token: string; relay: { caBundlePem: string } };
    clusters.push({ name, token: reg.token });
    caPem = reg.relay.caBundlePem;
  }
  return { clusters, caPem };
}

/** The server's /metrics as a map from series (name plus labels, as printed) to value. */
export async function scrapeMetrics(metricsPort: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

/**
 * The value of the first series whose metric name (labels aside) ends with `suffix` (default metrics carry a prefix).
 */
export function metricEndingWith(series: ReadonlyMap<string, number>, suffix: string): number | undefined {
  for (const [key, value] of series) if (key.split('{')[0]?.endsWith(suffix)) return value;
  return undefined;
}

/** Sends `signal` and resolves once the child has exited (at once if it already had). */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill(signal);
  return exited;
}
