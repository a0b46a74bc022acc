// The Redis flags: one way to reach Redis, TLS files only with TLS, and files read at start with
// an error that names the flag (DESIGN §10).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { parseServerConfig } from '../src/config.ts';
import { loadRedisEndpoint } from '../src/redis-endpoint-config.ts';

const invalid = (pattern: RegExp) => (e: unknown) =>
  e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_INVALID_CONFIG' && pattern.test(e.message);

test(
  'given sentinels and a master name, when parsed, then the endpoint names each sentinel and no URL is needed',
  { timeout: 10_000 },
  async () => {
    const config = parseServerConfig(
      ['--redis-sentinels', 's1.example.org:26379, [fd00::1]:26380', '--redis-sentinel-master', 'mymaster'],
      {},
    );
    const endpoint = await loadRedisEndpoint(config);
    assert.deepEqual(endpoint.sentinels, [
      { host: 's1.example.org', port: 26379 },
      { host: 'fd00::1', port: 26380 },
    ]);
    assert.equal(endpoint.sentinelMaster, 'mymaster');
    assert.equal(endpoint.tls, undefined);
  },
);

const BAD: readonly [string, readonly string[], RegExp][] = [
  [
    'sentinels without a master name',
    ['--redis-sentinels', 's1:26379'],
    /--redis-sentinels .* needs --redis-sentinel-master/,
  ],
  [
    'a master name without sentinels',
    ['--redis-sentinel-master', 'mymaster'],
    /--redis-sentinel-master .* needs --redis-sentinels/,
  ],
  [
    'both a URL and sentinels',
    ['--redis-url', 'redis://r:6379', '--redis-sentinels', 's1:26379', '--redis-sentinel-master', 'm'],
    /give one, not both/,
  ],
  ['a sentinel without a port', ['--redis-sentinels', 's1', '--redis-sentinel-master', 'm'], /"s1" is not host:port/],
  [
    'a sentinel port out of range',
    ['--redis-sentinels', 's1:70000', '--redis-sentinel-master', 'm'],
    /"s1:70000" is not host:port/,
  ],
  [
    'a CA file without TLS',
    ['--redis-url', 'redis://r:6379', '--redis-tls-ca-file', '/ca.crt'],
    /--redis-tls-ca-file .* needs --redis-tls/,
  ],
  [
    'a client certificate without its key',
    ['--redis-url', 'rediss://r:6379', '--redis-tls-cert-file', '/c.crt'],
    /give both or neither/,
  ],
  ['a URL of another scheme', ['--redis-url', 'http://r:6379'], /must start with redis:\/\/ or rediss:\/\//],
];

for (const [what, argv, message] of BAD) {
  test(`given ${what}, when parsed, then the error names the flag`, { timeout: 10_000 }, () => {
    assert.throws(() => parseServerConfig(argv, {}), invalid(message));
  });
}

test(
  'given credential and TLS files, when loaded, then passwords lose their trailing newline and PEM files are read as they are',
  { timeout: 10_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'meshrelay-redis-config-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'password'), 's3cret\n');
    writeFileSync(join(dir, 'ca.crt'), '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n');
    const config = parseServerConfig(
      [
        '--redis-url',
        'redis://r:6379',
        '--redis-username',
        'meshrelay',
        '--redis-password-file',
        join(dir, 'password'),
        '--redis-tls',
        '--redis-tls-ca-file',
        join(dir, 'ca.crt'),
        '--redis-tls-server-name',
        'redis.example.org',
      ],
      {},
    );
    const endpoint = await loadRedisEndpoint(config);
    assert.equal(endpoint.username, 'meshrelay');
    assert.equal(endpoint.password, 's3cret');
    assert.deepEqual(endpoint.tls, {
      ca: '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n',
      serverName: 'redis.example.org',
    });
  },
);

test(
  'given a password file that is missing or empty, when loaded, then the error names the flag and the file',
  { timeout: 10_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'meshrelay-redis-config-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const missing = parseServerConfig(
      ['--redis-url', 'redis://r:6379', '--redis-password-file', join(dir, 'absent')],
      {},
    );
    await assert.rejects(loadRedisEndpoint(missing), invalid(/--redis-password-file: cannot read .*absent: ENOENT/));
    writeFileSync(join(dir, 'empty'), '\n');
    const empty = parseServerConfig(
      [
        '--redis-sentinels',
        's:1',
        '--redis-sentinel-master',
        'm',
        '--redis-sentinel-password-file',
        join(dir, 'empty'),
      ],
      {},
    );
    await assert.rejects(loadRedisEndpoint(empty), invalid(/--redis-sentinel-password-file: .*empty is empty/));
  },
);
