import { Server, type ServerCredentials } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, RELAY_SERVICE } from '@meshrelay/api';
import { FailureRateLimiter } from '../rate-limiter.ts';
import { handlePull } from './pull-handler.ts';
import { handlePush } from './push-handler.ts';
import { handleRegister, handleRenew } from './registration-handler.ts';
import type { RelayContext } from './relay-context.ts';

export interface RelayServerOptions {
  readonly host: string;
  readonly port: number;
  readonly credentials: ServerCredentials;
  readonly registrationFailures: { readonly max: number; readonly windowMs: number };
}

export interface RelayServer {
  readonly port: number;
  /** Stops accepting calls; open streams are ended by the caller first (go-away). */
  stop(): Promise<void>;
}

/** Binds the relay gRPC port (Registration + Relay services). */
export async function startRelayServer(ctx: RelayContext, options: RelayServerOptions): Promise<RelayServer> {
  const server = new Server({
    'grpc.max_receive_message_length': Math.max(4 * 1024 * 1024, ctx.limits.chunkBytes * 2),
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.keepalive_permit_without_calls': 1,
  });
  const limiter = new FailureRateLimiter(options.registrationFailures.max, options.registrationFailures.windowMs);
  server.addService(REGISTRATION_SERVICE, {
    register: (call: Parameters<typeof handleRegister>[2], callback: Parameters<typeof handleRegister>[3]) => handleRegister(ctx, limiter, call, callback),
  });
  server.addService(RELAY_SERVICE, {
    push: (call: Parameters<typeof handlePush>[1]) => handlePush(ctx, call),
    pull: (call: Parameters<typeof handlePull>[1]) => handlePull(ctx, call),
    renew: (call: Parameters<typeof handleRenew>[1], callback: Parameters<typeof handleRenew>[2]) => handleRenew(ctx, call, callback),
  });
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${options.port}`, options.credentials, (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
