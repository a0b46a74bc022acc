import type { Server } from 'node:http';

/**
 * How long a stopping server lets requests in flight finish before it closes every connection.
 * A connection that never sends a request (a browser's speculative preconnect, a half-open
 * client) is neither idle nor busy to node:http, and would otherwise hold the close for good.
 */
export const HTTP_CLOSE_GRACE_MS = 2_000;

/**
 * Closes `server` as a stopping replica should: no new connections, idle ones closed now,
 * requests in flight given `graceMs` to finish, then every connection left is closed.
 * `close` is the owner's own close (Fastify's runs its hooks); it must end with the server closed.
 */
export async function closeHttpServer(
  server: Server,
  close: () => Promise<void>,
  graceMs = HTTP_CLOSE_GRACE_MS,
): Promise<void> {
  const closing = close();
  server.closeIdleConnections();
  const force = setTimeout(() => server.closeAllConnections(), graceMs);
  try {
    await closing;
  } finally {
    clearTimeout(force);
  }
}
