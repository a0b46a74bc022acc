import type { RedisOptions } from 'ioredis';

/** A Sentinel process to ask where the primary is. */
export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
}

/** TLS to Redis (and to the sentinels): PEM contents, not paths — the server reads the files at start. */
export interface RedisTls {
  /** CA bundle to verify the server's certificate; unset = the system's roots. */
  readonly ca?: string;
  /** Client certificate and key, for a Redis that asks for one (`tls-auth-clients yes`). */
  readonly cert?: string;
  readonly key?: string;
  /** Name checked against the server's certificate when it differs from the host dialled. */
  readonly serverName?: string;
}

/**
 * How to reach Redis beyond a plain URL: through Sentinel (the primary's address is asked of the
 * sentinels on every connect, so a reconnect after a failover lands on the promoted replica), with
 * ACL credentials, over TLS. Values given here win over the same part of a URL.
 */
export interface RedisEndpoint {
  readonly sentinels?: readonly SentinelAddress[];
  /** The name the sentinels monitor the primary under (`sentinel monitor <name> ...`). */
  readonly sentinelMaster?: string;
  readonly sentinelPassword?: string;
  readonly username?: string;
  readonly password?: string;
  readonly tls?: RedisTls;
}

/** Whether `endpoint` reaches Redis through Sentinel (then no URL is needed). */
export function usesSentinel(endpoint: RedisEndpoint | undefined): boolean {
  return endpoint?.sentinels !== undefined && endpoint.sentinels.length > 0;
}

/** The ioredis options that realise `endpoint`; merged over the client's own connection options. */
export function endpointClientOptions(endpoint: RedisEndpoint | undefined): RedisOptions {
  if (endpoint === undefined) return {};
  const options: RedisOptions = {};
  if (endpoint.username !== undefined) options.username = endpoint.username;
  if (endpoint.password !== undefined) options.password = endpoint.password;
  const tls = endpoint.tls === undefined ? undefined : tlsOptions(endpoint.tls);
  if (tls !== undefined) options.tls = tls;
  if (usesSentinel(endpoint)) {
    options.sentinels = endpoint.sentinels!.map((s) => ({ host: s.host, port: s.port }));
    if (endpoint.sentinelMaster !== undefined) options.name = endpoint.sentinelMaster;
    if (endpoint.sentinelPassword !== undefined) options.sentinelPassword = endpoint.sentinelPassword;
    // Sentinels of a TLS deployment speak TLS too (Redis's tls-port applies to sentinel mode); the
    // primary's connection keeps the same TLS settings once the sentinels name it.
    if (tls !== undefined) {
      options.sentinelTLS = tls;
      options.enableTLSForSentinelMode = true;
    }
    // A sentinel that still names the old primary right after a failover: ask again, briefly.
    options.sentinelRetryStrategy = (attempt: number) => Math.min(100 * attempt, 1000);
  }
  return options;
}

function tlsOptions(tls: RedisTls): NonNullable<RedisOptions['tls']> {
  return {
    ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
    ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
    ...(tls.key !== undefined ? { key: tls.key } : {}),
    ...(tls.serverName !== undefined ? { servername: tls.serverName } : {}),
  };
}
