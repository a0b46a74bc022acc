import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { parseAgentConfig } from '../src/config.ts';

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

test('given --leader-election file with a lease file and timings, when parsed, then they become typed values', () => {
  const config = parseAgentConfig([
    ...REQUIRED,
    '--leader-election',
    'file',
    '--lease-file',
    '/s/../leader.lease',
    '--lease-duration',
    '3s',
    '--renew-deadline',
    '2s',
    '--retry-period',
    '500ms',
    '--replica-id',
    'east-7',
    '--access-log-port',
    '0',
  ]);
  assert.equal(config.leaderElection, 'file');
  assert.equal(config.leaseFile, '/s/../leader.lease');
  assert.deepEqual([config.leaseDurationMs, config.renewDeadlineMs, config.retryPeriodMs], [3000, 2000, 500]);
  assert.equal(config.replicaId, 'east-7');
  assert.equal(config.accessLogPort, 0);
});

test('given --leader-election kubernetes without a lease name, when parsed, then the lease is named after the cluster', () => {
  const config = parseAgentConfig([...REQUIRED, '--leader-election', 'kubernetes', '--lease-namespace', 'relay']);
  assert.equal(config.leaseName, 'meshrelay-agent-east');
  assert.equal(config.leaseNamespace, 'relay');
});

test('given --leader-election file without --lease-file, when parsed, then the error says it is required', () => {
  assert.match(
    configError([...REQUIRED, '--leader-election', 'file']).message,
    /--lease-file is required with --leader-election file/,
  );
});

test('given an unknown election mode, when parsed, then the error names the flag and the choices', () => {
  assert.match(
    configError([...REQUIRED, '--leader-election', 'zookeeper']).message,
    /--leader-election: "zookeeper" is not one of none, file, kubernetes/,
  );
});

test('given a renew deadline as long as the lease, when parsed, then the error names --renew-deadline', () => {
  const err = configError([...REQUIRED, '--lease-duration', '10s', '--renew-deadline', '10s']);
  assert.equal(err.code, 'MESHRELAY_ERR_INVALID_CONFIG');
  assert.match(err.message, /--renew-deadline: must be shorter than --lease-duration \(10000 ms\)/);
});

test('given a retry period as long as the renew deadline, when parsed, then the error names --retry-period', () => {
  assert.match(
    configError([...REQUIRED, '--renew-deadline', '2s', '--retry-period', '2s']).message,
    /--retry-period: must be shorter than --renew-deadline/,
  );
});

test('given the access-log port equal to the health port, when parsed, then the error names --access-log-port', () => {
  assert.match(
    configError([...REQUIRED, '--health-port', '9000', '--access-log-port', '9000']).message,
    /--access-log-port: 9000 is already --health-port/,
  );
});

test('given the options as MESHRELAY_AGENT_* variables, when parsed, then they apply and errors name the variable', () => {
  const saved = { ...process.env };
  try {
    process.env['MESHRELAY_AGENT_LEADER_ELECTION'] = 'file';
    process.env['MESHRELAY_AGENT_LEASE_FILE'] = '/leases/east';
    process.env['MESHRELAY_AGENT_REPLICA_ID'] = 'pod-a';
    const config = parseAgentConfig(REQUIRED);
    assert.deepEqual([config.leaderElection, config.leaseFile, config.replicaId], ['file', '/leases/east', 'pod-a']);
    process.env['MESHRELAY_AGENT_LEASE_DURATION'] = 'soon';
    assert.match(
      configError(REQUIRED).message,
      /--lease-duration \(from MESHRELAY_AGENT_LEASE_DURATION\): "soon" is not a duration/,
    );
  } finally {
    process.env = saved;
  }
});

test('given no --replica-id but POD_NAME, when parsed, then the pod name is the replica id', () => {
  const saved = process.env['POD_NAME'];
  try {
    process.env['POD_NAME'] = 'meshrelay-agent-5f7c-x2x9k';
    assert.equal(parseAgentConfig(REQUIRED).replicaId, 'meshrelay-agent-5f7c-x2x9k');
  } finally {
    if (saved === undefined) delete process.env['POD_NAME'];
    else process.env['POD_NAME'] = saved;
  }
});
