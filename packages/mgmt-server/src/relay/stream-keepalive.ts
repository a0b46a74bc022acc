export interface KeepaliveOptions {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Sends one heartbeat to the peer. */
  readonly send: () => void;
  /** Called once when nothing arrived from the peer for timeoutMs. */
  readonly onSilence: () => void;
}

/**
 * Heartbeats in both directions for one stream: sends every intervalMs and
 * reports a silent peer (a half-open stream, a frozen process) after timeoutMs,
 * instead of waiting for a TCP timeout. Time this process itself was stalled
 * (a tick that came late: a long synchronous task, a GC pause) does not count
 * as the peer's silence: what the peer sent meanwhile is still unread in the
 * socket.
 */
export class StreamKeepalive {
  readonly #opts: KeepaliveOptions;
  readonly #timer: NodeJS.Timeout;
  #lastHeard = Date.now();
  #stopped = false;

  constructor(options: KeepaliveOptions) {
    this.#opts = options;
    const tick = Math.max(10, Math.min(options.intervalMs, Math.floor(options.timeoutMs / 3)));
    let sinceSend = 0;
    let lastTick = Date.now();
    this.#timer = setInterval(() => {
      const now = Date.now();
      const late = now - lastTick - tick;
      lastTick = now;
      if (late > tick) this.#lastHeard += late;
      sinceSend += tick;
      if (sinceSend >= options.intervalMs) {
        sinceSend = 0;
        options.send();
      }
      if (Date.now() - this.#lastHeard > options.timeoutMs) {
        this.stop();
        options.onSilence();
      }
    }, tick);
  }

  /** Anything received from the peer counts as a sign of life. */
  heard(): void {
    this.#lastHeard = Date.now();
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
  }
}
