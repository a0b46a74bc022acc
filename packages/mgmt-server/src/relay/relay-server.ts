import { createServer, type Server as NetServer } from 'node:net';
import { Server, type ServerCredentials } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, RELAY_SERVICE } from '@meshrelay/api';
import { FailureRateLimiter } from '../rate-limiter.ts';
import { PeerConnectionGuard } from './peer-connection-guard.ts';
import { handleMeshTrust } from './mesh-trust-handler.ts';
import { handlePull } from './pull-handler.ts';
import { handlePush } from './push-handler.ts';
import { handleRegister, handleRenew } from './registration-handler.ts';
import type { MeshTrustService } from '../mesh-trust/mesh-trust-service.ts';
import type { RelayContext } from './relay-context.ts';
import type { TokenBindings } from './token-bindings.ts';

/** How long a stopping relay server lets sessions finish before closing them. */
const STOP_GRACE_MS = 2000;

/**
 * A connection that carries no call for this long is closed (HTTP/2 GOAWAY). An agent's session
 * always has its Push and Pull streams open, and Register and Renew are single calls, so only an
 * abandoned connection is ever idle this long: one a client left open after closing its channel
 * (grpc-js keeps such connections in its subchannel pool). Left alone they fill the per-peer
 * connection cap, and in a reconnect storm from one address (NAT, a load generator) every new
 * connection was then refused before its TLS handshake.
 */
export const IDLE_CONNECTION_MS = 10_000;

export interface RelayServerOptions {
  readonly host: string;
  readonly port: number;
  /** Server credentials; their TLS handshake timeout is set by createRelayServerCredentials. */
  readonly credentials: ServerCredentials;
  readonly registrationFailures: { readonly max: number; readonly windowMs: number };
  /** Binds each relay token to the first key it registers (single use per registration). */
  readonly tokenBindings?: TokenBindings;
  /** Concurrent TCP connections admitted from one peer address. */
  readonly maxConnectionsPerPeer: number;
  /** Answers Relay.MeshTrust; absent, every call says mesh trust is off. */
  readonly meshTrust?: MeshTrustService;
}

export interface RelayServer {
  readonly port: number;
  /** Stops accepting calls; open streams are ended by the caller first (go-away). */
  stop(): Promise<void>;
}

/**
 * Binds the relay gRPC port (Registration + Relay services). The port is a
 * plain TCP listener of our own that admits at most maxConnectionsPerPeer
 * connections per address and hands the rest to grpc-js (connection
 * injector), which does TLS and HTTP/2; grpc-js itself has no per-peer cap.
 */
export async function startRelayServer(ctx: RelayContext, options: RelayServerOptions): Promise<RelayServer> {
  const server = new Server({
    'grpc.max_receive_message_length': Math.max(4 * 1024 * 1024, ctx.limits.chunkBytes * 2),
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_connection_idle_ms': IDLE_CONNECTION_MS,
  });
  const limits = {
    limiter: new FailureRateLimiter(options.registrationFailures.windowMs),
    maxFailuresPerSource: options.registrationFailures.max,
    ...(options.tokenBindings ? { bindings: options.tokenBindings } : {}),
  };
  server.addService(REGISTRATION_SERVICE, {
    register: (call: Parameters<typeof handleRegister>[2], callback: Parameters<typeof handleRegister>[3]) =>
      handleRegister(ctx, limits, call, callback),
  });
  server.addService(RELAY_SERVICE, {
    push: (call: Parameters<typeof handlePush>[1]) => handlePush(ctx, call),
    pull: (call: Parameters<typeof handlePull>[1]) => handlePull(ctx, call),
    renew: (call: Parameters<typeof handleRenew>[1], callback: Parameters<typeof handleRenew>[2]) =>
      handleRenew(ctx, call, callback),
    meshTrust: (call: Parameters<typeof handleMeshTrust>[2], callback: Parameters<typeof handleMeshTrust>[3]) =>
      handleMeshTrust(ctx, options.meshTrust, call, callback),
  });
  const injector = server.createConnectionInjector(options.credentials);
  const guard = new PeerConnectionGuard(options.maxConnectionsPerPeer, ctx.logger);
  const listener = createServer((socket) => {
    if (guard.admit(socket)) injector.injectConnection(socket);
  });
  const port = await listen(listener, options.host, options.port);
  return {
    port,
    stop: async () => {
      // Stop accepting, let each session finish what it is sending (the go-aways
      // written just before), then close what is left after the grace period.
      const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
      injector.drain(STOP_GRACE_MS);
      let grace: NodeJS.Timeout | undefined;
      const graceOver = new Promise<void>((resolve) => {
        grace = setTimeout(() => {
          server.forceShutdown();
          guard.destroyAll();
          resolve();
        }, STOP_GRACE_MS);
      });
      await Promise.race([new Promise<void>((resolve) => server.tryShutdown(() => resolve())), graceOver]);
      // Every connection ends by itself once its session closed, or at the end of the grace period.
      await Promise.race([closed, graceOver]);
      await closed;
      clearTimeout(grace);
      injector.destroy();
    },
  };
}

function listen(listener: NetServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(port, host, () => {
      listener.off('error', reject);
      resolve((listener.address() as { port: number }).port);
    });
  });
}
