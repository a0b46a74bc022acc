import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { buildAgentCommand, parseAgentConfig } from '../src/config.ts';

const REQUIRED = ['--cluster', 'east', '--manifests-dir', '/m', '--output-dir', '/o', '--state-dir', '/s'];

function configError(argv: string[]): MeshrelayError {
  try {
    parseAgentConfig(argv);
  } catch (err) {
    assert.ok(err instanceof MeshrelayError, `expected a MeshrelayError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the config to be refused');
}

test('given only the required flags, when parsed, then every default applies', () => {
  const config = parseAgentConfig(REQUIRED);
  assert.deepEqual(
    { ...config },
    {
      cluster: 'east',
      serverAddresses: ['localhost:9900'],
      discoveryProvider: 'file',
      apply: 'file',
      manifestsDir: '/m',
      outputDir: '/o',
      watchNamespaces: [],
      istioNamespace: 'istio-system',
      stateDir: '/s',
      credentialsNamespace: 'gloo-mesh',
      debounceMs: 100,
      rescanIntervalMs: 60_000,
      maxManifestFileBytes: 8 * 1024 * 1024,
      maxManifestsBytes: 64 * 1024 * 1024,
      followExternalSymlinks: false,
      healthPort: 9977,
      healthHost: '0.0.0.0',
      heartbeatIntervalMs: 5000,
      heartbeatTimeoutMs: 15000,
      logLevel: 'info',
      maxSnapshotBytes: 64 * 1024 * 1024,
      accessLogPort: 9978,
      accessLogHost: '0.0.0.0',
      xdsPort: 0,
      xdsHost: '127.0.0.1',
      interestRenewIntervalMs: 300_000,
      leaderElection: 'none',
      leaseName: 'meshrelay-agent-east',
      leaseNamespace: 'gloo-mesh',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      replicaId: process.env['POD_NAME'] || `${hostname()}-${process.pid}`,
      workloadCertTtlMs: 86_400_000,
      trustIntervalMs: 30_000,
    },
  );
});

test('given a list of addresses, durations and sizes, when parsed, then they become typed values', () => {
  const config = parseAgentConfig([
    ...REQUIRED,
    '--server-address',
    'a.example:9900, localhost:9901,[::1]:9902',
    '--heartbeat-interval',
    '200ms',
    '--heartbeat-timeout',
    '1.5s',
    '--max-snapshot-bytes',
    '64KiB',
    '--health-port',
    '0',
    '--token',
    'tok',
  ]);
  assert.deepEqual(config.serverAddresses, ['a.example:9900', 'localhost:9901', '[::1]:9902']);
  assert.equal(config.heartbeatIntervalMs, 200);
  assert.equal(config.heartbeatTimeoutMs, 1500);
  assert.equal(config.maxSnapshotBytes, 65536);
  assert.equal(config.healthPort, 0);
  assert.equal(config.token, 'tok');
});

test('given --debounce-ms with a unit or as a bare number, when parsed, then both mean milliseconds, and more than a minute is refused naming the flag', () => {
  assert.equal(parseAgentConfig([...REQUIRED, '--debounce-ms', '250']).debounceMs, 250);
  assert.equal(parseAgentConfig([...REQUIRED, '--debounce-ms', '250ms']).debounceMs, 250);
  assert.equal(parseAgentConfig([...REQUIRED, '--debounce-ms', '1.5s']).debounceMs, 1500);
  assert.match(configError([...REQUIRED, '--debounce-ms', '2m']).message, /--debounce-ms: 2m is longer than 60000 ms/);
});

test("given --status-dir, when parsed, then the file provider's statuses go there; without it the config names none", () => {
  assert.equal(parseAgentConfig([...REQUIRED, '--status-dir', '/run/east/status']).statusDir, '/run/east/status');
  assert.equal(parseAgentConfig(REQUIRED).statusDir, undefined);
});

test('given an address without a port, when parsed, then the error names --server-address and the value', () => {
  const err = configError([...REQUIRED, '--server-address', 'x']);
  assert.equal(err.code, 'MESHRELAY_ERR_INVALID_CONFIG');
  assert.match(err.message, /--server-address: "x" is not host:port/);
});

test('given no cluster, when parsed, then the error says --cluster is required', () => {
  const err = configError(REQUIRED.slice(2));
  assert.match(err.message, /--cluster is required/);
});

test('given several bad values, when parsed, then one error names each bad field', () => {
  const err = configError([
    ...REQUIRED,
    '--health-port',
    '70000',
    '--log-level',
    'loud',
    '--debounce-ms',
    'soon',
    '--max-snapshot-bytes',
    '12 parsecs',
  ]);
  assert.match(err.message, /--health-port: 70000 is outside 0\.\.65535/);
  assert.match(err.message, /--log-level: "loud" is not one of/);
  assert.match(
    err.message,
    /--debounce-ms: "soon" is not a duration such as 500ms, .* or a bare number of milliseconds/,
  );
  assert.match(err.message, /--max-snapshot-bytes: "12 parsecs" is not a size/);
});

test('given a heartbeat timeout not longer than the interval, when parsed, then it is refused', () => {
  const err = configError([...REQUIRED, '--heartbeat-interval', '5s', '--heartbeat-timeout', '5s']);
  assert.match(err.message, /--heartbeat-timeout: must be longer than --heartbeat-interval/);
});

test('given both --token and --token-file, when parsed, then they are refused as exclusive', () => {
  const err = configError([...REQUIRED, '--token', 'a', '--token-file', '/t']);
  assert.match(err.message, /mutually exclusive/);
});

test('given a value in MESHRELAY_AGENT_SERVER_ADDRESS, when parsed, then it is used and a bad one names the variable', (t) => {
  t.after(() => {
    delete process.env['MESHRELAY_AGENT_SERVER_ADDRESS'];
  });
  process.env['MESHRELAY_AGENT_SERVER_ADDRESS'] = 'relay.example:443';
  assert.deepEqual(parseAgentConfig(REQUIRED).serverAddresses, ['relay.example:443']);
  process.env['MESHRELAY_AGENT_SERVER_ADDRESS'] = 'relay.example';
  assert.match(
    configError(REQUIRED).message,
    /--server-address \(from MESHRELAY_AGENT_SERVER_ADDRESS\): "relay.example" is not host:port/,
  );
});

test('given the command, when help is rendered, then every option shows its variable and the defaults', () => {
  // Wrapped at the terminal width; compare with whitespace collapsed.
  const help = buildAgentCommand().helpInformation().replace(/\s+/g, ' ');
  for (const flag of [
    '--cluster',
    '--server-address',
    '--token-file',
    '--root-ca-file',
    '--manifests-dir',
    '--heartbeat-timeout',
    '--max-snapshot-bytes',
  ]) {
    assert.ok(help.includes(flag), `help lacks ${flag}`);
  }
  assert.match(help, /MESHRELAY_AGENT_CLUSTER/);
  assert.match(help, /default: "localhost:9900"/);
  assert.match(help, /default: "64MiB", env: MESHRELAY_AGENT_MAX_SNAPSHOT_BYTES/);
});

test('given listener hosts, manifest limits and --follow-external-symlinks, when parsed, then they become typed values', () => {
  const config = parseAgentConfig([
    ...REQUIRED,
    '--health-host',
    '127.0.0.1',
    '--access-log-host',
    '::1',
    '--max-manifest-file-bytes',
    '1MiB',
    '--max-manifests-bytes',
    '10MiB',
    '--follow-external-symlinks',
  ]);
  assert.equal(config.healthHost, '127.0.0.1');
  assert.equal(config.accessLogHost, '::1');
  assert.equal(config.maxManifestFileBytes, 1024 * 1024);
  assert.equal(config.maxManifestsBytes, 10 * 1024 * 1024);
  assert.equal(config.followExternalSymlinks, true);
});

test('given a listener host that is neither an IP nor a host name, when parsed, then the error names the flag', () => {
  const err = configError([...REQUIRED, '--health-host', 'not a host', '--access-log-host', '[::1]']);
  assert.match(err.message, /--health-host: "not a host" is not an IP address or host name to listen on/);
  assert.match(err.message, /--access-log-host: "\[::1\]" is not an IP address or host name to listen on/);
});

test('given MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS=false, when parsed, then external symlinks stay refused, and a non-boolean is an error', (t) => {
  t.after(() => {
    delete process.env['MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS'];
  });
  process.env['MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS'] = 'false';
  assert.equal(parseAgentConfig(REQUIRED).followExternalSymlinks, false);
  process.env['MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS'] = 'true';
  assert.equal(parseAgentConfig(REQUIRED).followExternalSymlinks, true);
  process.env['MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS'] = 'yes please';
  assert.match(
    configError(REQUIRED).message,
    /--follow-external-symlinks \(from MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS\): "yes please" is not true or false/,
  );
});
