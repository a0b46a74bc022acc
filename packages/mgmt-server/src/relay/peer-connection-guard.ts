import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/**
 * Counts the relay port's TCP connections per peer address and closes those
 * past the cap at once, before any TLS work is done for them: one address
 * cannot hold the server's memory and file descriptors with idle or
 * half-open connections. Agents need one or two connections each; the cap is
 * for a NAT or a load balancer in front of many agents to be raised.
 */
export class PeerConnectionGuard {
  readonly #maxPerPeer: number;
  readonly #logger: Logger;
  readonly #byPeer = new Map<string, Set<Socket>>();
  #refused = 0;

  constructor(maxPerPeer: number, logger: Logger) {
    this.#maxPerPeer = maxPerPeer;
    this.#logger = logger;
  }

  /** Admits the socket (and tracks it until it closes), or destroys it and returns false. */
  admit(socket: Socket): boolean {
    const peer = socket.remoteAddress ?? 'unknown';
    const open = this.#byPeer.get(peer) ?? new Set<Socket>();
    if (open.size >= this.#maxPerPeer) {
      this.#refused++;
      // One line per burst, not per connection: a flood must not become a log flood.
      if (this.#refused === 1 || this.#refused % 1000 === 0) {
        this.#logger.warn(
          { peer, open: open.size, refused: this.#refused, limit: this.#maxPerPeer },
          'relay connection refused: too many connections from this address (--max-connections-per-peer)',
        );
      }
      socket.destroy();
      return false;
    }
    open.add(socket);
    this.#byPeer.set(peer, open);
    socket.once('close', () => {
      open.delete(socket);
      if (open.size === 0 && this.#byPeer.get(peer) === open) this.#byPeer.delete(peer);
    });
    return true;
  }

  /** Open connections from one address. */
  count(peer: string): number {
    return this.#byPeer.get(peer)?.size ?? 0;
  }

  /** Destroys every tracked connection (at shutdown, after the gRPC sessions were closed). */
  destroyAll(): void {
    for (const open of this.#byPeer.values()) for (const socket of open) socket.destroy();
    this.#byPeer.clear();
  }
}
