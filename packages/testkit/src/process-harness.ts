import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** How a child process ended: an exit code, or the signal that ended it. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface SpawnOptions {
  readonly command: string;
  readonly args?: readonly string[];
  /** Merged over the parent's environment (a key set to undefined is removed). */
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Shown in error messages; defaults to the command's file name. */
  readonly name?: string;
}

export type LineMatcher = RegExp | ((line: string) => boolean);

export interface WaitForLineOptions {
  /** Only lines numbered at or after this sequence number match (see `lineCount`); default 0. */
  readonly after?: number;
}

/** A running child process whose stdout and stderr are captured line by line. */
export interface ProcessHandle {
  readonly name: string;
  readonly pid: number;
  /** The last MAX_CAPTURED_LINES lines of stdout and stderr, interleaved in arrival order. */
  readonly lines: readonly string[];
  /** How many lines have arrived since the start (also those no longer kept in `lines`). */
  readonly lineCount: number;
  /** Resolves once the process has exited; never rejects. */
  readonly exited: Promise<ProcessExit>;
  /** Whether the process is still running. */
  readonly running: boolean;
  /**
   * Resolves with the first line (already captured or still to come) that matches.
   * Rejects when the deadline passes or the process exits first; the error quotes the last lines.
   */
  waitForLine(match: LineMatcher, timeoutMs: number, options?: WaitForLineOptions): Promise<string>;
  /** SIGTERM, then SIGKILL after `graceMs` (default 5000); resolves once the process has exited. */
  stop(graceMs?: number): Promise<ProcessExit>;
  /** SIGKILL; resolves once the process has exited. */
  kill(): Promise<ProcessExit>;
  /** SIGSTOP: the process hangs, its sockets stay open. */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

export const MAX_CAPTURED_LINES = 2000;
const DEFAULT_STOP_GRACE_MS = 5000;
const TAIL_LINES_IN_ERRORS = 20;

// Children still running when the test process exits are killed so none outlive the run.
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL');
  });
}

/**
 * Starts a child process and resolves once it has been spawned.
 * Rejects when it cannot be started (for example ENOENT: the command is not installed);
 * the rejection's `cause` is the spawn error, whose `code` says why.
 */
export async function spawnProcess(options: SpawnOptions): Promise<ProcessHandle> {
  const name = options.name ?? options.command.split('/').pop() ?? options.command;
  const child = spawn(options.command, [...(options.args ?? [])], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) =>
      reject(new Error(`${name}: cannot start ${options.command}: ${err.message}`, { cause: err })),
    );
  });
  installExitHook();
  liveChildren.add(child);
  return new ChildProcessHandle(name, child);
}

class ChildProcessHandle implements ProcessHandle {
  readonly name: string;
  readonly pid: number;
  readonly exited: Promise<ProcessExit>;
  readonly #child: ChildProcess;
  readonly #lines: string[] = [];
  readonly #lineListeners = new Set<() => void>();
  #lineCount = 0;
  #exit: ProcessExit | undefined;
  /** Set once stdout and stderr are drained too, so no captured line can still arrive. */
  #closed = false;

  constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.#child = child;
    this.pid = child.pid ?? -1;
    this.exited = new Promise<ProcessExit>((resolve) => {
      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        liveChildren.delete(child);
        resolve(this.#exit);
      });
    });
    child.once('close', () => {
      this.#closed = true;
      this.#notify();
    });
    if (child.stdout) captureLines(child.stdout, (line) => this.#push(line));
    if (child.stderr) captureLines(child.stderr, (line) => this.#push(line));
  }

  get lines(): readonly string[] {
    return this.#lines;
  }

  get lineCount(): number {
    return this.#lineCount;
  }

  get running(): boolean {
    return this.#exit === undefined;
  }

  waitForLine(match: LineMatcher, timeoutMs: number, options: WaitForLineOptions = {}): Promise<string> {
    const test = typeof match === 'function' ? match : (line: string) => match.test(line);
    const describe = typeof match === 'function' ? 'a matching line' : String(match);
    return new Promise<string>((resolve, reject) => {
      const check = (): void => {
        const found = this.#findLine(test, options.after ?? 0);
        if (found !== undefined) return finish(() => resolve(found));
        if (this.#closed && this.#exit) {
          finish(() =>
            reject(this.#error(`exited (${formatExit(this.#exit as ProcessExit)}) before printing ${describe}`)),
          );
        }
      };
      const timer = setTimeout(
        () => finish(() => reject(this.#error(`printed no ${describe} within ${timeoutMs} ms`))),
        timeoutMs,
      );
      const finish = (settle: () => void): void => {
        clearTimeout(timer);
        this.#lineListeners.delete(check);
        settle();
      };
      this.#lineListeners.add(check);
      check();
    });
  }

  async stop(graceMs = DEFAULT_STOP_GRACE_MS): Promise<ProcessExit> {
    if (this.#exit) return this.#exit;
    this.#signal('SIGCONT'); // a paused process cannot act on SIGTERM
    this.#signal('SIGTERM');
    const timer = setTimeout(() => this.#signal('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  async kill(): Promise<ProcessExit> {
    if (this.#exit) return this.#exit;
    this.#signal('SIGKILL');
    return this.exited;
  }

  pause(): void {
    this.#signal('SIGSTOP');
  }

  resume(): void {
    this.#signal('SIGCONT');
  }

  #signal(signal: NodeJS.Signals): void {
    if (this.#exit) return;
    try {
      this.#child.kill(signal);
    } catch {
      // ESRCH: the process exited between the check and the signal; `exited` will settle.
    }
  }

  #push(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length > MAX_CAPTURED_LINES) this.#lines.splice(0, this.#lines.length - MAX_CAPTURED_LINES);
    this.#lineCount++;
    this.#notify();
  }

  #notify(): void {
    for (const listener of [...this.#lineListeners]) listener();
  }

  #findLine(test: (line: string) => boolean, after: number): string | undefined {
    const firstKept = this.#lineCount - this.#lines.length;
    for (let i = Math.max(0, after - firstKept); i < this.#lines.length; i++) {
      const line = this.#lines[i] as string;
      if (test(line)) return line;
    }
    return undefined;
  }

  #error(what: string): Error {
    const tail = this.#lines
      .slice(-TAIL_LINES_IN_ERRORS)
      .map((l) => `  | ${l}`)
      .join('\n');
    return new Error(`${this.name} (pid ${this.pid}) ${what}; last lines:\n${tail}`);
  }
}

function captureLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split(/\r?\n/);
    partial = parts.pop() ?? '';
    for (const line of parts) onLine(line);
  });
  stream.on('end', () => {
    if (partial !== '') onLine(partial);
    partial = '';
  });
}

function formatExit(exit: ProcessExit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${String(exit.code)}`;
}

export interface WaitForOptions {
  /** Default 10000. */
  readonly timeoutMs?: number;
  /** Default 25. */
  readonly intervalMs?: number;
  /** The rejection's message when the deadline passes. */
  readonly message?: string;
}

/**
 * Polls `condition` until it returns true. Rejects with `message` once `timeoutMs` has passed;
 * a condition that throws counts as false, and its last error is quoted in the rejection.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: WaitForOptions = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await condition()) return;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const base = options.message ?? `condition not met within ${timeoutMs} ms`;
      const detail =
        lastError === undefined
          ? ''
          : ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      throw new Error(`${base}${detail}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Ports handed to child processes come from below the kernel's ephemeral range (32768 and up on
 * Linux), so no outgoing connection can take one between the pick and the child's bind; and each is
 * claimed with a file only one process can create, so test files running side by side never pick
 * the same one. A claim is released when its process exits; one left by a process that died is
 * taken over.
 */
const PORT_RANGE = { first: 20_000, last: 32_000 } as const;
const CLAIM_DIR = join(tmpdir(), 'meshrelay-test-ports');
const claimed = new Set<number>();
let releaseOnExit = false;

function claimPort(port: number): boolean {
  const file = join(CLAIM_DIR, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const owner = Number(readFileSync(file, 'utf8'));
    if (owner === process.pid || isAlive(owner)) return false;
    // The owner died without releasing it: take it over (one winner, by the rename below).
    const mine = `${file}.${process.pid}`;
    writeFileSync(mine, String(process.pid));
    renameSync(mine, file);
    if (Number(readFileSync(file, 'utf8')) !== process.pid) return false;
  }
  claimed.add(port);
  if (!releaseOnExit) {
    releaseOnExit = true;
    process.once('exit', () => {
      for (const p of claimed) rmSync(join(CLAIM_DIR, String(p)), { force: true });
    });
  }
  return true;
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function canBind(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A TCP port on 127.0.0.1 that is free now and that no other test process will pick. */
export async function freePort(): Promise<number> {
  mkdirSync(CLAIM_DIR, { recursive: true });
  const span = PORT_RANGE.last - PORT_RANGE.first + 1;
  const offset = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const port = PORT_RANGE.first + ((offset + i) % span);
    if (claimed.has(port) || !claimPort(port)) continue;
    if (await canBind(port)) return port;
  }
  throw new Error(`freePort: no free port in ${PORT_RANGE.first}-${PORT_RANGE.last}`);
}
