import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  UNUSED_TOKEN_ENV,
  closedPortUrl,
  meshctl,
  meshctlAt,
  startServer,
  startSilentListener,
  tempDir,
} from './harness.ts';

test('given nothing listening, when clusters are listed, then one "cannot reach" line and exit 1', async () => {
  const url = await closedPortUrl();

  const result = await meshctlAt(url, ['cluster', 'list'], UNUSED_TOKEN_ENV);

  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.match(
    result.stderr,
    new RegExp(`^meshctl: cannot reach the management server at ${url}: .*ECONNREFUSED.*\\n$`),
  );
});

test('given MESHCTL_SERVER points at nothing, when clusters are listed, then the variable is used', async () => {
  const url = await closedPortUrl();

  const result = await meshctl(['cluster', 'list'], { MESHCTL_SERVER: url, ...UNUSED_TOKEN_ENV });

  assert.equal(result.code, 1);
  assert.ok(result.stderr.startsWith(`meshctl: cannot reach the management server at ${url}: `), result.stderr);
});

test('given a server that never answers, when clusters are listed with --timeout, then meshctl gives up with one line and exit 1', async (t) => {
  const listener = await startSilentListener(t);

  const result = await meshctlAt(listener.url, ['--timeout', '200', 'cluster', 'list'], UNUSED_TOKEN_ENV);

  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    `meshctl: the management server at ${listener.url} did not answer GET /api/v1/clusters within 200 ms\n`,
  );
});

test('given a server that never answers, when clusters are listed with --timeout as a duration, then meshctl gives up after that many milliseconds', async (t) => {
  const listener = await startSilentListener(t);

  const result = await meshctlAt(listener.url, ['--timeout', '0.2s', 'cluster', 'list'], UNUSED_TOKEN_ENV);

  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    `meshctl: the management server at ${listener.url} did not answer GET /api/v1/clusters within 200 ms\n`,
  );
});

const USAGE_ERRORS: readonly { name: string; args: readonly string[]; env?: Record<string, string>; stderr: RegExp }[] =
  [
    {
      name: 'an unknown output format',
      args: ['-o', 'yaml2', 'cluster', 'list'],
      stderr: /argument 'yaml2' is invalid\. Allowed choices are text, table, json/,
    },
    {
      name: 'an unknown output format in MESHCTL_OUTPUT',
      args: ['cluster', 'list'],
      env: { MESHCTL_OUTPUT: 'yaml2' },
      stderr: /--output \(MESHCTL_OUTPUT\): "yaml2" is not one of text, table, json/,
    },
    {
      name: 'an invalid cluster name',
      args: ['cluster', 'register', 'East_1'],
      stderr: /"East_1" is not a valid cluster name/,
    },
    {
      name: 'an invalid cluster name for a snapshot',
      args: ['snapshot', 'output', '-bad-'],
      stderr: /unknown option '-bad-'|"-bad-" is not a valid cluster name/,
    },
    {
      name: 'a cluster name longer than 63 characters',
      args: ['cluster', 'deregister', 'a'.repeat(64)],
      stderr: /is not a valid cluster name/,
    },
    { name: 'a missing cluster name', args: ['cluster', 'register'], stderr: /missing required argument 'name'/ },
    {
      name: 'a bad --skip-warming value',
      args: ['cluster', 'update', 'east', '--skip-warming=maybe'],
      stderr: /"maybe" is not true or false/,
    },
    {
      name: 'a bad --cluster-domain',
      args: ['cluster', 'register', 'east', '--cluster-domain', 'Not A Domain'],
      stderr: /--cluster-domain .*not a DNS name/,
    },
    {
      name: 'markup and a newline in --cluster-domain',
      args: ['cluster', 'register', 'east', '--cluster-domain', 'evil domain\n<b>x</b>'],
      stderr: /--cluster-domain .*not a DNS name/,
    },
    {
      name: 'markup in --cluster-domain of an update',
      args: ['cluster', 'update', 'east', '--cluster-domain', 'evil domain\n<b>x</b>'],
      stderr: /--cluster-domain .*not a DNS name/,
    },
    {
      name: 'a --cluster-domain label over 63 characters',
      args: ['cluster', 'register', 'east', '--cluster-domain', `${'a'.repeat(64)}.local`],
      stderr: /--cluster-domain .*not a DNS name/,
    },
    {
      name: 'a bad --cluster-domain with --kubeconfig',
      args: [
        'cluster',
        'register',
        'east',
        '--kubeconfig',
        '/nonexistent',
        '--cluster-domain',
        `${'a'.repeat(64)}.local`,
      ],
      stderr: /--cluster-domain .*not a DNS name/,
    },
    {
      name: 'markup and a newline in --trust-domain',
      args: ['cluster', 'register', 'east', '--trust-domain', 'evil domain\n<b>x</b>'],
      stderr: /--trust-domain .*not a DNS name/,
    },
    {
      name: 'markup in --trust-domain of an update',
      args: ['cluster', 'update', 'east', '--trust-domain', 'evil domain\n<b>x</b>'],
      stderr: /--trust-domain .*not a DNS name/,
    },
    {
      name: 'a bad --trust-domain with --kubeconfig',
      args: [
        'cluster',
        'register',
        'east',
        '--kubeconfig',
        '/nonexistent',
        '--trust-domain',
        `${'a'.repeat(64)}.local`,
      ],
      stderr: /--trust-domain .*not a DNS name/,
    },
    {
      name: 'a non-numeric --timeout',
      args: ['--timeout', 'soon', 'cluster', 'list'],
      stderr:
        /--timeout \(MESHCTL_TIMEOUT\): "soon" is not a duration such as 500ms, 30s, .* or a bare number of milliseconds/,
    },
    {
      name: 'a --token-ttl that is not a duration',
      args: ['cluster', 'register', 'east', '--kubeconfig', '/nonexistent', '--token-ttl', '2 weeks'],
      stderr: /--token-ttl: "2 weeks" is not a duration such as .* or a bare number of seconds/,
    },
    {
      name: 'a --token-ttl under a minute',
      args: ['cluster', 'register', 'east', '--kubeconfig', '/nonexistent', '--token-ttl', '30s'],
      stderr: /--token-ttl: 30s is shorter than 60 s/,
    },
    { name: 'an unknown flag', args: ['cluster', 'list', '--colour'], stderr: /unknown option '--colour'/ },
    { name: 'an unknown command', args: ['clusters', 'list'], stderr: /unknown command 'clusters'/ },
    { name: 'an extra argument', args: ['cluster', 'list', 'east'], stderr: /too many arguments/ },
    {
      name: 'a command group without a command',
      args: ['cluster'],
      stderr: /missing command: see "meshctl cluster --help"/,
    },
  ];

for (const c of USAGE_ERRORS) {
  test(`given ${c.name}, when meshctl runs, then it exits 2 with one line and does not contact the server`, async (t) => {
    const listener = await startSilentListener(t);

    const result = await meshctl(['--server', listener.url, ...c.args], c.env);

    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^meshctl: [^\n]+\n$/);
    assert.match(result.stderr, c.stderr);
    assert.equal(listener.connections(), 0);
  });
}

test('given --server pointing at something other than the API, when clusters are listed, then one line says so and exit 1', async (t) => {
  const { server } = await startServer(t);
  const url = `http://127.0.0.1:${server.metricsPort}`;

  const result = await meshctlAt(url, ['cluster', 'list'], UNUSED_TOKEN_ENV);

  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    `meshctl: MESHRELAY_ERR_NOT_FOUND: the server at ${url} answered HTTP 404 Not Found without a Meshrelay error body (is this the Meshrelay HTTP API?) (GET /api/v1/clusters, HTTP 404)\n`,
  );
});

test('given a --server that is not an http URL, when meshctl runs, then it exits 2', async () => {
  const result = await meshctl(['--server', 'ftp://example.org', 'cluster', 'list']);

  assert.equal(result.code, 2);
  assert.equal(result.stderr, 'meshctl: --server: "ftp://example.org" must start with http:// or https://\n');
});

const TOKEN = 'let-me-in-0123456789';

const API_COMMANDS: readonly (readonly string[])[] = [
  ['cluster', 'list'],
  ['cluster', 'register', 'east'],
  ['cluster', 'deregister', 'east'],
  ['check'],
  ['safe-mode', 'status'],
  ['snapshot', 'input', 'east'],
  ['output', 'release', 'east'],
  ['debug', 'report'],
];

for (const args of API_COMMANDS) {
  test(`given no admin token anywhere, when "meshctl ${args.join(' ')}" runs, then it exits 1 naming every way to give one and contacts no server`, async (t) => {
    const listener = await startSilentListener(t);

    const result = await meshctl(['--server', listener.url, ...args]);

    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^meshctl: no admin token: [^\n]+\n$/);
    for (const way of [
      '--admin-token',
      'MESHRELAY_ADMIN_TOKEN',
      '--admin-token-file',
      'MESHRELAY_ADMIN_TOKEN_FILE',
      '--state-dir',
      'MESHRELAY_STATE_DIR',
      '.run/server/admin-token',
      'meshrelay-admin-token',
    ]) {
      assert.ok(result.stderr.includes(way), `the error names ${way}: ${result.stderr}`);
    }
    assert.equal(listener.connections(), 0);
  });
}

test('given a server with an admin token, when a wrong token is given, then exit 1 naming where it came from, and nothing changes', async (t) => {
  const { server, url } = await startServer(t, ['--admin-token', TOKEN]);

  const result = await meshctlAt(url, ['--admin-token', `${TOKEN}x`, 'cluster', 'register', 'east']);
  const read = await meshctlAt(url, ['cluster', 'list'], { MESHRELAY_ADMIN_TOKEN: `${TOKEN}x` });

  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^meshctl: MESHRELAY_ERR_UNAUTHENTICATED: the admin token is wrong \(meshctl sent the admin token from --admin-token or MESHRELAY_ADMIN_TOKEN\) \(POST \/api\/v1\/clusters, HTTP 401\)\n$/,
  );
  assert.equal(read.code, 1);
  assert.match(read.stderr, /MESHRELAY_ERR_UNAUTHENTICATED/);
  assert.equal(server.registry.get('east'), undefined);
});

test('given a server with an admin token, when the token comes from --admin-token or MESHRELAY_ADMIN_TOKEN, then calls succeed', async (t) => {
  const { server, url } = await startServer(t, ['--admin-token', TOKEN]);

  const byFlag = await meshctlAt(url, ['--admin-token', TOKEN, 'cluster', 'register', 'east']);
  const byEnv = await meshctlAt(url, ['cluster', 'update', 'east', '--skip-warming'], { MESHRELAY_ADMIN_TOKEN: TOKEN });

  assert.equal(byFlag.code, 0, byFlag.stderr);
  assert.equal(byEnv.code, 0, byEnv.stderr);
  assert.equal(server.registry.get('east')?.spec.skipWarming, true);
});

test('given a token file, when it is named by --admin-token-file or MESHRELAY_ADMIN_TOKEN_FILE, then calls succeed', async (t) => {
  const { server, url } = await startServer(t, ['--admin-token', TOKEN]);
  const file = join(await tempDir(t), 'token');
  await writeFile(file, `${TOKEN}\n`, { mode: 0o600 });

  const byFlag = await meshctl(['--server', url, '--admin-token-file', file, 'cluster', 'register', 'east']);
  const byEnv = await meshctl(['--server', url, 'cluster', 'list'], { MESHRELAY_ADMIN_TOKEN_FILE: file });

  assert.equal(byFlag.code, 0, byFlag.stderr);
  assert.equal(byEnv.code, 0, byEnv.stderr);
  assert.match(byEnv.stdout, /east/);
  assert.ok(server.registry.get('east'));
});

test('given a token file that does not exist, when meshctl runs, then it exits 2 naming the file', async (t) => {
  const listener = await startSilentListener(t);

  const result = await meshctl([
    '--server',
    listener.url,
    '--admin-token-file',
    '/nonexistent/token',
    'cluster',
    'list',
  ]);

  assert.equal(result.code, 2);
  assert.equal(
    result.stderr,
    'meshctl: --admin-token-file (MESHRELAY_ADMIN_TOKEN_FILE): cannot read /nonexistent/token\n',
  );
  assert.equal(listener.connections(), 0);
});

test('given a server that made its own token, when meshctl runs where the local run keeps it or with --state-dir, then it finds the token there', async (t) => {
  const { url, stateDir } = await startServer(t);
  const cwd = await tempDir(t);

  const byFlag = await meshctl(['--server', url, '--state-dir', stateDir, 'cluster', 'register', 'east']);
  const none = await meshctl(['--server', url, 'cluster', 'list'], {}, cwd);
  await mkdir(join(cwd, '.run'));
  await symlink(stateDir, join(cwd, '.run', 'server'));
  const byLocalRun = await meshctl(['--server', url, 'cluster', 'list'], {}, cwd);

  assert.equal(byFlag.code, 0, byFlag.stderr);
  assert.equal(none.code, 1);
  assert.match(
    none.stderr,
    new RegExp(`looked for ${join(cwd, '.run/server/admin-token')} and ${join(cwd, '.meshrelay/server/admin-token')}`),
  );
  assert.equal(byLocalRun.code, 0, byLocalRun.stderr);
  assert.match(byLocalRun.stdout, /east/);
});

test("given a local run's token, when meshctl is pointed at a server on another machine, then it does not send that token there", async (t) => {
  const { stateDir } = await startServer(t);
  const cwd = await tempDir(t);
  await mkdir(join(cwd, '.run'));
  await symlink(stateDir, join(cwd, '.run', 'server'));
  const remote = await startSilentListener(t);
  const remoteUrl = remote.url.replace('127.0.0.1', 'mgmt.example.invalid');

  const result = await meshctl(['--server', remoteUrl, 'cluster', 'list'], {}, cwd);

  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^meshctl: no admin token: .*the local run's \.run\/server and \.meshrelay\/server are read only for a server on this machine\)\n$/,
  );
  assert.equal(remote.connections(), 0);
});

test('given --help, when meshctl runs, then the global options show their variables and defaults and it exits 0', async () => {
  const result = await meshctl(['--help']);

  assert.equal(result.code, 0);
  for (const text of [
    'MESHCTL_SERVER',
    'MESHRELAY_ADMIN_TOKEN',
    'MESHRELAY_ADMIN_TOKEN_FILE',
    'MESHRELAY_STATE_DIR',
    '.run/server',
    'MESHCTL_OUTPUT',
    'MESHCTL_TIMEOUT',
    'http://localhost:8090',
    '"5000"',
  ]) {
    assert.ok(result.stdout.includes(text), `help mentions ${text}`);
  }
});
