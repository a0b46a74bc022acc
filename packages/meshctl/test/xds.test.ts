/**
 * meshctl xds bootstrap and proxy list: the bootstrap a workload reads, and the proxy table from an agent's
 * /xds/proxies.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseProxies, renderProxies } from '../src/commands/xds.ts';
import { meshctl } from './harness.ts';

test(
  'given an agent address, node id and locality, when xds bootstrap runs, then it prints a gRPC xDS v3 bootstrap with them',
  { timeout: 60_000 },
  async () => {
    const r = await meshctl([
      'xds',
      'bootstrap',
      '--agent-address',
      'localhost:15010',
      '--node-id',
      'sidecar~10.0.0.1~app-1.shop~shop.svc.cluster.local',
      '--locality',
      'eu/eu-1a',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      xds_servers: [
        { server_uri: 'localhost:15010', channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
      ],
      node: { id: 'sidecar~10.0.0.1~app-1.shop~shop.svc.cluster.local', locality: { region: 'eu', zone: 'eu-1a' } },
    });
  },
);

test(
  'given a locality with four parts, when xds bootstrap runs, then it is a usage error naming the value',
  { timeout: 60_000 },
  async () => {
    const r = await meshctl([
      'xds',
      'bootstrap',
      '--agent-address',
      'localhost:15010',
      '--node-id',
      'n',
      '--locality',
      'a/b/c/d',
    ]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /"a\/b\/c\/d" is not region\[\/zone\[\/subzone\]\]/);
  },
);

test(
  'given an agent address without a port, when xds bootstrap runs, then it is a usage error',
  { timeout: 60_000 },
  async () => {
    const r = await meshctl(['xds', 'bootstrap', '--agent-address', 'localhost', '--node-id', 'n']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /"localhost" is not host:port/);
  },
);

test(
  'given a workload certificate directory, when xds bootstrap runs, then it adds the file_watcher provider on its three files and the server Listener template',
  { timeout: 60_000 },
  async () => {
    const r = await meshctl([
      'xds',
      'bootstrap',
      '--agent-address',
      'localhost:15010',
      '--node-id',
      'n',
      '--workload-certs',
      '/var/lib/meshrelay/workload-certs/shop/reviews/',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const bootstrap = JSON.parse(r.stdout);
    assert.equal(bootstrap.server_listener_resource_name_template, 'grpc/server?xds.resource.listening_address=%s');
    assert.deepEqual(bootstrap.certificate_providers, {
      meshrelay: {
        plugin_name: 'file_watcher',
        config: {
          certificate_file: '/var/lib/meshrelay/workload-certs/shop/reviews/certificate.pem',
          private_key_file: '/var/lib/meshrelay/workload-certs/shop/reviews/private_key.pem',
          ca_certificate_file: '/var/lib/meshrelay/workload-certs/shop/reviews/ca_certificate.pem',
          refresh_interval: '10s',
        },
      },
    });
    const bad = await meshctl([
      'xds',
      'bootstrap',
      '--agent-address',
      'localhost:15010',
      '--node-id',
      'n',
      '--workload-certs',
      'd',
      '--cert-refresh',
      '10m',
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /"10m" is not a whole number of seconds such as 10s/);
  },
);

test(
  'given an agent nobody listens for, when proxy list runs, then it fails with one line naming the URL',
  { timeout: 60_000 },
  async () => {
    const r = await meshctl(['proxy', 'list', '--agent', 'http://127.0.0.1:1', '--timeout', '2s']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot reach the agent at http:\/\/127\.0\.0\.1:1\/xds\/proxies/);
  },
);

test('given an agent answer with a NACKed proxy, when rendered, then the table shows its subscriptions, ACKed versions and the NACK reason', () => {
  const rows = parseProxies([
    {
      nodeId: 'client-1',
      locality: { region: 'eu', zone: 'eu-1a' },
      subscribed: {
        lds: ['reviews.global:9080'],
        cds: ['outbound|9080||reviews.global', 'outbound|9080|v2|reviews.global'],
      },
      acked: { lds: 'a1b2c3d4e5f6a7b8', cds: '' },
      nacks: 1,
      lastNack: {
        typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
        version: 'ffff',
        reason: 'bad cluster',
        at: '2026-11-28T23:00:00.000Z',
      },
    },
  ]);
  const text = renderProxies(rows, new Date('2026-11-28T23:00:30.000Z'));
  assert.match(text, /^NODE\s+LOCALITY\s+LDS\s+RDS\s+CDS\s+EDS\s+NACKS\s+LAST NACK$/m);
  assert.match(text, /^client-1\s+eu\/eu-1a\s+1@a1b2c3d4\s+-\s+2@-\s+-\s+1\s+Cluster 30s ago: bad cluster$/m);
});

test('given an answer that is not a list, when parsed, then it is rejected with a message', () => {
  assert.throws(() => parseProxies({ status: 'ok' }), /not a list of proxies/);
});
