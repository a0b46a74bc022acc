import { readFile } from 'node:fs/promises';
import { MeshrelayError } from '@meshrelay/api';
import type { RedisEndpoint, SentinelAddress } from '@meshrelay/store';
import type { ServerConfig } from './config.ts';

type RedisConfig = Pick<
  ServerConfig,
  | 'redisUrl'
  | 'redisSentinels'
  | 'redisSentinelMaster'
  | 'redisSentinelPasswordFile'
  | 'redisUsername'
  | 'redisPasswordFile'
  | 'redisTls'
  | 'redisTlsCaFile'
  | 'redisTlsCertFile'
  | 'redisTlsKeyFile'
  | 'redisTlsServerName'
>;

const invalid = (message: string) => new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', message);

/**
 * Checks that the Redis flags describe one way to reach Redis: a URL or sentinels with a master
 * name, TLS files only with TLS, a client certificate with its key. Throws
 * MESHRELAY_ERR_INVALID_CONFIG naming the flag. Files are read later (loadRedisEndpoint).
 */
export function assertRedisConfig(config: RedisConfig): void {
  if (config.redisUrl !== undefined && !/^rediss?:\/\//.test(config.redisUrl)) {
    throw invalid(`--redis-url (REDIS_URL): "${config.redisUrl}" must start with redis:// or rediss://`);
  }
  const sentinels = config.redisSentinels.length > 0;
  if (sentinels && config.redisUrl !== undefined) {
    throw invalid(
      '--redis-url (REDIS_URL) and --redis-sentinels (MESHRELAY_REDIS_SENTINELS): give one, not both (the sentinels name the primary)',
    );
  }
  if (sentinels && config.redisSentinelMaster === undefined) {
    throw invalid(
      '--redis-sentinels (MESHRELAY_REDIS_SENTINELS) needs --redis-sentinel-master (MESHRELAY_REDIS_SENTINEL_MASTER): the name the sentinels monitor',
    );
  }
  if (!sentinels && config.redisSentinelMaster !== undefined) {
    throw invalid(
      '--redis-sentinel-master (MESHRELAY_REDIS_SENTINEL_MASTER) needs --redis-sentinels (MESHRELAY_REDIS_SENTINELS)',
    );
  }
  if (!sentinels && config.redisSentinelPasswordFile !== undefined) {
    throw invalid(
      '--redis-sentinel-password-file (MESHRELAY_REDIS_SENTINEL_PASSWORD_FILE) needs --redis-sentinels (MESHRELAY_REDIS_SENTINELS)',
    );
  }
  for (const entry of config.redisSentinels) parseSentinel(entry);
  const tls = config.redisTls || (config.redisUrl?.startsWith('rediss://') ?? false);
  for (const [flag, env, value] of [
    ['redis-tls-ca-file', 'MESHRELAY_REDIS_TLS_CA_FILE', config.redisTlsCaFile],
    ['redis-tls-cert-file', 'MESHRELAY_REDIS_TLS_CERT_FILE', config.redisTlsCertFile],
    ['redis-tls-key-file', 'MESHRELAY_REDIS_TLS_KEY_FILE', config.redisTlsKeyFile],
    ['redis-tls-server-name', 'MESHRELAY_REDIS_TLS_SERVER_NAME', config.redisTlsServerName],
  ] as const) {
    if (value !== undefined && !tls)
      throw invalid(`--${flag} (${env}) needs --redis-tls (MESHRELAY_REDIS_TLS) or a rediss:// URL`);
  }
  if ((config.redisTlsCertFile === undefined) !== (config.redisTlsKeyFile === undefined)) {
    throw invalid(
      '--redis-tls-cert-file (MESHRELAY_REDIS_TLS_CERT_FILE) and --redis-tls-key-file (MESHRELAY_REDIS_TLS_KEY_FILE): give both or neither',
    );
  }
}

/** `host:port` (an IPv6 host in brackets) as a sentinel address; throws naming the entry. */
export function parseSentinel(entry: string): SentinelAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(entry);
  const port = match === null ? NaN : Number(match[3]);
  if (match === null || port < 1 || port > 65535) {
    throw invalid(`--redis-sentinels (MESHRELAY_REDIS_SENTINELS): "${entry}" is not host:port`);
  }
  return { host: match[1] ?? match[2]!, port };
}

/** Whether the server is configured to use Redis at all. */
export function redisConfigured(config: RedisConfig): boolean {
  return config.redisUrl !== undefined || config.redisSentinels.length > 0;
}

/**
 * Reads the files the Redis flags name (passwords, CA bundle, client certificate and key) into
 * the endpoint the store dials with. Throws MESHRELAY_ERR_INVALID_CONFIG naming the flag and the
 * file when one cannot be read or is empty. A password file's trailing newline is not part of it.
 */
export async function loadRedisEndpoint(config: RedisConfig): Promise<RedisEndpoint> {
  const tls = config.redisTls || (config.redisUrl?.startsWith('rediss://') ?? false);
  const sentinelPassword = await readSecret('redis-sentinel-password-file', config.redisSentinelPasswordFile, true);
  const password = await readSecret('redis-password-file', config.redisPasswordFile, true);
  const ca = await readSecret('redis-tls-ca-file', config.redisTlsCaFile, false);
  const cert = await readSecret('redis-tls-cert-file', config.redisTlsCertFile, false);
  const key = await readSecret('redis-tls-key-file', config.redisTlsKeyFile, false);
  return {
    ...(config.redisSentinels.length > 0 ? { sentinels: config.redisSentinels.map(parseSentinel) } : {}),
    ...(config.redisSentinelMaster !== undefined ? { sentinelMaster: config.redisSentinelMaster } : {}),
    ...(sentinelPassword !== undefined ? { sentinelPassword } : {}),
    ...(config.redisUsername !== undefined ? { username: config.redisUsername } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(tls
      ? {
          tls: {
            ...(ca !== undefined ? { ca } : {}),
            ...(cert !== undefined ? { cert } : {}),
            ...(key !== undefined ? { key } : {}),
            ...(config.redisTlsServerName !== undefined ? { serverName: config.redisTlsServerName } : {}),
          },
        }
      : {}),
  };
}

async function readSecret(flag: string, path: string | undefined, trimNewline: boolean): Promise<string | undefined> {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `--${flag}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { cause: err },
    );
  }
  const value = trimNewline ? text.replace(/\r?\n$/, '') : text;
  if (value.trim() === '') throw invalid(`--${flag}: ${path} is empty`);
  return value;
}
