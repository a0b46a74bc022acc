/** The part of a grpc-js call (client or server side) that the writer needs. */
export interface WritableCall<T> {
  write(message: T, callback: (error?: Error | null) => void): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/**
 * Writes messages onto one gRPC stream in order, honouring backpressure: once
 * `write()` returns false nothing more is handed to gRPC until 'drain'. What
 * the peer has not taken yet stays countable (`queuedBytes`), so the caller
 * can bound it — by sending the next snapshot only after the previous one was
 * acked, and by dropping messages that are worthless late (writeIfIdle).
 */
export class OutboundWriter<T> {
  readonly #call: WritableCall<T>;
  readonly #sizeOf: (message: T) => number;
  readonly #queue: T[] = [];
  #queuedBytes = 0;
  #inTransport = 0;
  #blocked = false;

  constructor(call: WritableCall<T>, sizeOf: (message: T) => number) {
    this.#call = call;
    this.#sizeOf = sizeOf;
  }

  /** Queues a message; it goes out as soon as the stream takes more. */
  write(message: T): void {
    this.#queue.push(message);
    this.#queuedBytes += this.#sizeOf(message);
    this.#flush();
  }

  /** Writes only when nothing is waiting (heartbeats: a late one says nothing). Returns whether it was written. */
  writeIfIdle(message: T): boolean {
    if (this.#blocked || this.#queue.length > 0) return false;
    this.write(message);
    return true;
  }

  /**
   * Hands everything still queued to gRPC at once, before the stream is ended
   * (a go-away must not be lost). Bounded: the queue never holds more than the
   * caller allowed in.
   */
  release(): void {
    this.#blocked = false;
    const rest = this.#queue.splice(0);
    this.#queuedBytes = 0;
    for (const message of rest) this.#call.write(message, () => undefined);
  }

  /** Bytes written but not yet flushed to the transport, plus bytes still queued here. */
  get queuedBytes(): number {
    return this.#queuedBytes + this.#inTransport;
  }

  #flush(): void {
    while (!this.#blocked && this.#queue.length > 0) {
      const message = this.#queue.shift() as T;
      const size = this.#sizeOf(message);
      this.#queuedBytes -= size;
      this.#inTransport += size;
      const more = this.#call.write(message, () => {
        this.#inTransport -= size;
      });
      if (!more) {
        this.#blocked = true;
        this.#call.once('drain', () => {
          this.#blocked = false;
          this.#flush();
        });
      }
    }
  }
}

/** Approximate wire size of a relay message: chunk payload plus a small envelope. */
export function relayMessageBytes(message: object): number {
  const chunk = (message as { chunk?: { data?: Uint8Array | null } | null }).chunk;
  return (chunk?.data?.length ?? 0) + 64;
}
