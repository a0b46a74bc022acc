import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { parseServerConfig } from '../src/config.ts';

const invalid = (pattern: RegExp) => (e: unknown) => e instanceof MeshrelayError && e.code === 'MESHRELAY_ERR_INVALID_CONFIG' && pattern.test(e.message);

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
  const c = parseServerConfig(['--relay-port', '1234'], { MESHRELAY_RELAY_PORT: '999', REDIS_URL: 'redis://127.0.0.1:1', MESHRELAY_SAFE_MODE: 'true', POD_NAME: 'mgmt-7' });
  assert.equal(c.relayPort, 1234);
  assert.equal(c.redisUrl, 'redis://127.0.0.1:1');
  assert.equal(c.safeMode, true);
  assert.equal(c.replicaName, 'mgmt-7');
});

test('a bad value names the option and its environment variable', () => {
  assert.throws(() => parseServerConfig(['--relay-port', 'abc'], {}), invalid(/--relay-port \(MESHRELAY_RELAY_PORT\): "abc" is not a whole number/));
  assert.throws(() => parseServerConfig(['--http-port', '70000'], {}), invalid(/--http-port.*not a port/));
  assert.throws(() => parseServerConfig(['--safe-mode', 'maybe'], {}), invalid(/--safe-mode.*true or false/));
  assert.throws(() => parseServerConfig([], { REDIS_URL: 'localhost:6379' }), invalid(/REDIS_URL/));
  assert.throws(() => parseServerConfig(['--heartbeat-interval', '5000', '--heartbeat-timeout', '100'], {}), invalid(/--heartbeat-timeout/));
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
