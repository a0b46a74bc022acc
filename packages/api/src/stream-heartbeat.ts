export interface StreamHeartbeatOptions {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Sends one heartbeat to the peer. */
  readonly send: () => void;
  /** Called once when nothing arrived from the peer for timeoutMs. */
  readonly onSilence: () => void;
  readonly now?: () => number;
}

/**
 * Heartbeats for one relay stream, used by both ends: sends every intervalMs and
 * reports a silent peer (half-open TCP, a frozen process) after timeoutMs, so a
 * dead stream is left within seconds instead of a TCP timeout. Time this process
 * itself was stalled (a late tick: a long synchronous task, a GC pause) does not
 * count as the peer's silence: what the peer sent meanwhile is still unread.
 */
export class StreamHeartbeat {
  readonly #opts: StreamHeartbeatOptions;
  readonly #now: () => number;
  readonly #timer: NodeJS.Timeout;
  #lastHeard: number;
  #lastSent: number;
  #lastTick: number;
  readonly #tickMs: number;
  #stopped = false;

  constructor(options: StreamHeartbeatOptions) {
    this.#opts = options;
    this.#now = options.now ?? Date.now;
    this.#lastHeard = this.#now();
    this.#lastSent = this.#lastHeard;
    this.#lastTick = this.#lastHeard;
    // Tick often enough to honour both the interval and the timeout closely.
    this.#tickMs = Math.max(5, Math.floor(Math.min(options.intervalMs / 2, options.timeoutMs / 4)));
    this.#timer = setInterval(() => this.#tick(), this.#tickMs);
  }

  /** Anything received from the peer counts as a sign of life. */
  heard(): void {
    this.#lastHeard = this.#now();
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  #tick(): void {
    const now = this.#now();
    const late = now - this.#lastTick - this.#tickMs;
    this.#lastTick = now;
    if (late > this.#tickMs) this.#lastHeard += late;
    if (now - this.#lastHeard > this.#opts.timeoutMs) {
      this.stop();
      this.#opts.onSilence();
      return;
    }
    if (now - this.#lastSent >= this.#opts.intervalMs) {
      this.#lastSent = now;
      this.#opts.send();
    }
  }
}
