import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { parseServerConfig } from '../src/config.ts';

const invalid = (pattern: RegExp) => (e: unknown) =>
  e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_INVALID_CONFIG' && pattern.test(e.message);

test('defaults match the documented ports and safe-start window', () => {
  const c = parseServerConfig([], {});
  assert.equal(c.relayPort, 9900);
  assert.equal(c.httpPort, 8090);
  assert.equal(c.metricsPort, 9091);
  assert.equal(c.safeMode, false);
  assert.equal(c.safeStartWindowSeconds, 180);
  assert.equal(c.redisUrl, undefined);
});

test('environment variables set options and flags override them', () => {
  const c = parseServerConfig(['--relay-port', '1234'], {
    MESHRELAY_RELAY_PORT: '999',
    REDIS_URL: 'redis://127.0.0.1:1',
    MESHRELAY_SAFE_MODE: 'true',
    POD_NAME: 'mgmt-7',
  });
  assert.equal(c.relayPort, 1234);
  assert.equal(c.redisUrl, 'redis://127.0.0.1:1');
  assert.equal(c.safeMode, true);
  assert.equal(c.replicaName, 'mgmt-7');
});

test('a bad value names the option and its environment variable', () => {
  assert.throws(
    () => parseServerConfig(['--relay-port', 'abc'], {}),
    invalid(/--relay-port \(MESHRELAY_RELAY_PORT\): "abc" is not a whole number/),
  );
  assert.throws(() => parseServerConfig(['--http-port', '70000'], {}), invalid(/--http-port.*not a port/));
  assert.throws(() => parseServerConfig(['--safe-mode', 'maybe'], {}), invalid(/--safe-mode.*true or false/));
  assert.throws(() => parseServerConfig([], { REDIS_URL: 'localhost:6379' }), invalid(/REDIS_URL/));
  assert.throws(
    () => parseServerConfig(['--heartbeat-interval', '5000', '--heartbeat-timeout', '100'], {}),
    invalid(/--heartbeat-timeout/),
  );
});

test('parsing reads only the given environment and leaves process.env as it was', () => {
  const before = process.env['MESHRELAY_HTTP_PORT'];
  process.env['MESHRELAY_HTTP_PORT'] = '1111';
  try {
    assert.equal(parseServerConfig([], {}).httpPort, 8090);
    assert.equal(parseServerConfig([], { MESHRELAY_HTTP_PORT: '2222' }).httpPort, 2222);
    assert.equal(process.env['MESHRELAY_HTTP_PORT'], '1111');
  } finally {
    if (before === undefined) delete process.env['MESHRELAY_HTTP_PORT'];
    else process.env['MESHRELAY_HTTP_PORT'] = before;
  }
});

test('given no host flags, when parsed, then the API and metrics bind to loopback and only the relay to every address', () => {
  const c = parseServerConfig([], {});
  assert.equal(c.relayHost, '0.0.0.0');
  assert.equal(c.httpHost, '127.0.0.1');
  assert.equal(c.metricsHost, '127.0.0.1');
  assert.deepEqual(c.httpAllowedHosts, []);
  const set = parseServerConfig(['--metrics-host', '0.0.0.0'], {
    MESHRELAY_HTTP_HOST: '0.0.0.0',
    MESHRELAY_HTTP_ALLOWED_HOSTS: 'mgmt.example.org,api.example.org',
  });
  assert.equal(set.metricsHost, '0.0.0.0');
  assert.equal(set.httpHost, '0.0.0.0');
  assert.deepEqual(set.httpAllowedHosts, ['mgmt.example.org', 'api.example.org']);
});

test('given an admin token that is too short, has spaces, or comes with a token file too, when parsed, then the config is refused naming the option', () => {
  assert.throws(
    () => parseServerConfig(['--admin-token', 's3cret'], {}),
    invalid(/--admin-token \(MESHRELAY_ADMIN_TOKEN\): .*at least 16/),
  );
  assert.throws(
    () => parseServerConfig([], { MESHRELAY_ADMIN_TOKEN: 'a token with spaces in it' }),
    invalid(/MESHRELAY_ADMIN_TOKEN/),
  );
  assert.throws(
    () => parseServerConfig(['--admin-token', 'x'.repeat(20), '--admin-token-file', '/tmp/t'], {}),
    invalid(/give one, not both/),
  );
  assert.equal(
    parseServerConfig([], { MESHRELAY_ADMIN_TOKEN_FILE: '/run/secrets/admin' }).adminTokenFile,
    '/run/secrets/admin',
  );
});

test('given a relay admit rate of 0, when parsed, then the config is refused naming the option', () => {
  assert.equal(parseServerConfig([], {}).relayAdmitRate, 50);
  assert.throws(
    () => parseServerConfig(['--relay-admit-rate', '0'], {}),
    invalid(/--relay-admit-rate \(MESHRELAY_RELAY_ADMIT_RATE\): must be at least 1/),
  );
});

test('given durations and sizes with units or as plain numbers, when parsed, then both mean the same milliseconds and bytes', () => {
  const withUnits = parseServerConfig(
    [
      '--heartbeat-interval',
      '200ms',
      '--heartbeat-timeout',
      '2s',
      '--max-snapshot-bytes',
      '16MiB',
      '--drain-retry-after',
      '1.5s',
    ],
    {},
  );
  const plain = parseServerConfig(
    [
      '--heartbeat-interval',
      '200',
      '--heartbeat-timeout',
      '2000',
      '--max-snapshot-bytes',
      String(16 * 1024 * 1024),
      '--drain-retry-after',
      '1500',
    ],
    {},
  );
  for (const c of [withUnits, plain]) {
    assert.deepEqual(
      [c.heartbeatIntervalMs, c.heartbeatTimeoutMs, c.maxSnapshotBytes, c.drainRetryAfterMs],
      [200, 2000, 16 * 1024 * 1024, 1500],
    );
  }
  assert.throws(
    () => parseServerConfig(['--heartbeat-interval', '5 parsecs'], {}),
    invalid(/--heartbeat-interval \(MESHRELAY_HEARTBEAT_INTERVAL\): "5 parsecs" is not a duration/),
  );
  assert.throws(
    () => parseServerConfig(['--max-snapshot-bytes', '16MB'], {}),
    invalid(/--max-snapshot-bytes.*is not a size/),
  );
});

/** The flags once counted in bare seconds, with the config field each sets. */
const SECONDS_FLAGS = [
  ['--safe-start-window', 'safeStartWindowSeconds', 'MESHRELAY_SAFE_START_WINDOW'],
  ['--token-ttl', 'tokenTtlSeconds', 'MESHRELAY_TOKEN_TTL'],
  ['--token-overlap', 'tokenOverlapSeconds', 'MESHRELAY_TOKEN_OVERLAP'],
  ['--client-cert-lifetime', 'clientCertLifetimeSeconds', 'MESHRELAY_CLIENT_CERT_LIFETIME'],
  ['--registration-failure-window', 'registrationFailureWindowSeconds', 'MESHRELAY_REGISTRATION_FAILURE_WINDOW'],
] as const;

for (const [flag, key, env] of SECONDS_FLAGS) {
  test(`given ${flag} as a duration with a unit, when parsed, then it holds the same seconds as the bare number it always took`, () => {
    for (const [raw, seconds] of [
      ['90', 90],
      ['90s', 90],
      ['3m', 180],
      ['2h', 7200],
      ['7d', 604_800],
      ['2000ms', 2],
    ] as const) {
      assert.equal(parseServerConfig([flag, raw], {})[key], seconds, `${flag} ${raw}`);
    }
    assert.equal(parseServerConfig([], { [env]: '5m' })[key], 300, `${env}=5m`);
  });

  test(`given ${flag} that is not a duration or not whole seconds, when parsed, then the error names the flag, its variable and the accepted forms`, () => {
    assert.throws(
      () => parseServerConfig([flag, 'soon'], {}),
      invalid(new RegExp(`${flag} \\(${env}\\): "soon" is not a duration such as .*7d, or a bare number of seconds`)),
    );
    assert.throws(
      () => parseServerConfig([flag, '1500ms'], {}),
      invalid(new RegExp(`${flag} \\(${env}\\): "1500ms" is not a whole number of seconds`)),
    );
  });
}

test('given the millisecond duration flags and the size flag with units, when parsed, then bare numbers keep meaning ms and bytes', () => {
  const c = parseServerConfig(
    [
      '--snapshot-transfer-timeout',
      '2m',
      '--tls-handshake-timeout',
      '3s',
      '--translation-debounce',
      '250',
      '--max-snapshot-bytes',
      '64MiB',
    ],
    {},
  );
  assert.deepEqual(
    [c.snapshotTransferTimeoutMs, c.tlsHandshakeTimeoutMs, c.translationDebounceMs, c.maxSnapshotBytes],
    [120_000, 3000, 250, 64 * 1024 * 1024],
  );
  assert.throws(
    () => parseServerConfig(['--translation-debounce', '1w'], {}),
    invalid(
      /--translation-debounce \(MESHRELAY_TRANSLATION_DEBOUNCE\): "1w" is not a duration such as 500ms, 30s, 3m, 1h, 7d, or a bare number of milliseconds/,
    ),
  );
  assert.throws(
    () => parseServerConfig(['--max-snapshot-bytes', '16MB'], {}),
    invalid(
      /--max-snapshot-bytes \(MESHRELAY_MAX_SNAPSHOT_BYTES\): "16MB" is not a size such as 64KiB, 16MiB, 1GiB or a bare number of bytes/,
    ),
  );
});

test('given the memory reclaim idle time, when parsed, then it is on by default (5 s), 0 turns it off and a bad value names the option', () => {
  assert.equal(parseServerConfig([], {}).memoryReclaimIdleMs, 5000);
  assert.equal(parseServerConfig(['--memory-reclaim-idle', '0'], {}).memoryReclaimIdleMs, 0);
  assert.equal(parseServerConfig([], { MESHRELAY_MEMORY_RECLAIM_IDLE: '1m' }).memoryReclaimIdleMs, 60_000);
  assert.throws(
    () => parseServerConfig(['--memory-reclaim-idle', 'soon'], {}),
    invalid(/--memory-reclaim-idle \(MESHRELAY_MEMORY_RECLAIM_IDLE\): "soon" is not a duration/),
  );
});
