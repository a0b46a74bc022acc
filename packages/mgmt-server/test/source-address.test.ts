import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sourceAddressOf } from '../src/relay/source-address.ts';

test('given peers as grpc-js reports them, when their source is taken, then the host and its /24 or /64 network are named', () => {
  const cases: Array<[peer: string, host: string, network: string]> = [
    ['203.0.113.7:40112', '203.0.113.7', '203.0.113.0/24'],
    ['127.3.0.9:1', '127.3.0.9', '127.3.0.0/24'],
    ['::ffff:198.51.100.20:5555', '198.51.100.20', '198.51.100.0/24'],
    ['2001:db8:aa:bb:1:2:3:4:443', '2001:db8:aa:bb:1:2:3:4', '2001:db8:aa:bb::/64'],
    ['2001:DB8::1:8080', '2001:db8::1', '2001:db8:0:0::/64'],
    ['::1:50000', '::1', '0:0:0:0::/64'],
    ['[2001:db8:1:2::9]:443', '2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['fe80::1%eth0:9900', 'fe80::1', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.1:80', '64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
  ];
  for (const [peer, host, network] of cases) {
    assert.deepEqual(sourceAddressOf(peer), { host, network }, peer);
  }
});

test('given addresses of one /24 or one /64, when their sources are taken, then they share a network and keep their own host', () => {
  const v4 = ['198.51.100.1:1', '198.51.100.254:2'].map(sourceAddressOf);
  const v6 = ['2001:db8:5:6:ffff::1:3', '2001:db8:5:6:1::2:4'].map(sourceAddressOf);

  assert.equal(v4[0]?.network, v4[1]?.network);
  assert.notEqual(v4[0]?.host, v4[1]?.host);
  assert.equal(v6[0]?.network, v6[1]?.network);
  assert.notEqual(v6[0]?.host, v6[1]?.host);
  assert.notEqual(sourceAddressOf('198.51.101.1:1').network, v4[0]?.network);
});

test('given a peer that is no IP address, when its source is taken, then the network is the peer itself', () => {
  assert.deepEqual(sourceAddressOf('/run/meshrelay.sock'), {
    host: '/run/meshrelay.sock',
    network: '/run/meshrelay.sock',
  });
});
