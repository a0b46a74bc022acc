import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnProcess, type ProcessHandle } from './process-harness.ts';

/** A real redis-server child process on 127.0.0.1, with no persistence. */
export interface RedisServerHandle {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** The server's captured output (for failure messages). */
  readonly lines: readonly string[];
  /** SIGTERM and wait for the exit. Safe to call when already stopped. */
  stop(): Promise<void>;
  /** SIGKILL and wait for the exit: a crash, as clients see it. Safe to call when already stopped. */
  kill(): Promise<void>;
  /** Stops the server if it runs, then starts a new, empty one on the same port. */
  restart(): Promise<void>;
  /** SIGSTOP: the server hangs with its connections open. */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

export interface RedisServerOptions {
  /** Default: a free port. */
  readonly port?: number;
  /** Default 10000: how long to wait for "Ready to accept connections". */
  readonly readyTimeoutMs?: number;
}

const REDIS_BINARY = 'redis-server';
const READY_LINE = /Ready to accept connections/;
const DEFAULT_READY_TIMEOUT_MS = 10_000;
// A free port may be taken between picking it and redis binding it; pick again a few times.
const PORT_ATTEMPTS = 3;

/**
 * Starts redis-server (`--save '' --appendonly no`, a fresh temp dir) and resolves once it
 * accepts connections. Throws "redis-server not found: …" when the binary is not installed,
 * and an error quoting the server's output when it exits or stays silent past the deadline.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServerHandle> {
  const readyTimeoutMs = options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  if (options.port !== undefined) {
    return new RedisServer(options.port, await launch(options.port, readyTimeoutMs), readyTimeoutMs);
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    try {
      return new RedisServer(port, await launch(port, readyTimeoutMs), readyTimeoutMs);
    } catch (err) {
      if (err instanceof RedisMissingError) throw err;
      lastError = err;
    }
  }
  throw lastError;
}

class RedisMissingError extends Error {}

interface Launched {
  readonly process: ProcessHandle;
  readonly dir: string;
}

async function launch(port: number, readyTimeoutMs: number): Promise<Launched> {
  const dir = await mkdtemp(join(tmpdir(), 'meshrelay-redis-'));
  let child: ProcessHandle;
  try {
    child = await spawnProcess({
      command: REDIS_BINARY,
      args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      name: `redis-server:${port}`,
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    if ((err as { cause?: { code?: string } }).cause?.code === 'ENOENT') {
      throw new RedisMissingError('redis-server not found: apt-get install -y redis-server', { cause: err });
    }
    throw err;
  }
  try {
    await child.waitForLine(READY_LINE, readyTimeoutMs);
  } catch (err) {
    await child.kill();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return { process: child, dir };
}

class RedisServer implements RedisServerHandle {
  readonly port: number;
  readonly url: string;
  readonly #readyTimeoutMs: number;
  #current: Launched | undefined;
  #lastProcess: ProcessHandle;

  constructor(port: number, launched: Launched, readyTimeoutMs: number) {
    this.port = port;
    this.url = `redis://127.0.0.1:${port}`;
    this.#current = launched;
    this.#lastProcess = launched.process;
    this.#readyTimeoutMs = readyTimeoutMs;
  }

  get lines(): readonly string[] {
    return this.#lastProcess.lines;
  }

  async stop(): Promise<void> {
    await this.#end((p) => p.stop());
  }

  async kill(): Promise<void> {
    await this.#end((p) => p.kill());
  }

  async restart(): Promise<void> {
    await this.stop();
    this.#current = await launch(this.port, this.#readyTimeoutMs);
    this.#lastProcess = this.#current.process;
  }

  pause(): void {
    this.#current?.process.pause();
  }

  resume(): void {
    this.#current?.process.resume();
  }

  async #end(end: (p: ProcessHandle) => Promise<unknown>): Promise<void> {
    const current = this.#current;
    if (!current) return;
    this.#current = undefined;
    await end(current.process);
    await rm(current.dir, { recursive: true, force: true });
  }
}
