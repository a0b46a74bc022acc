// Real Redis topologies for end-to-end tests: a primary with a replica watched by three Sentinel
// processes (`redis-server --sentinel`: the redis-server package is all they need), and a TLS-only Redis with a
// password and client certificates. Every process is a
// real redis-server; every one is stopped and every directory removed through the test context.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createTestPki, freePort, spawnProcess, waitFor, type ProcessHandle } from '@meshrelay/testkit';

const READY = /Ready to accept connections/;
export const SENTINEL_MASTER = 'meshrelay-primary';

export interface SentinelTopology {
  readonly primary: ProcessHandle;
  readonly primaryPort: number;
  readonly replica: ProcessHandle;
  readonly replicaPort: number;
  readonly sentinels: readonly ProcessHandle[];
  /** `host:port,...` for --redis-sentinels. */
  readonly sentinelList: string;
}

function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startRedis(t: TestContext, name: string, args: readonly string[]): Promise<ProcessHandle> {
  const proc = await spawnProcess({ name, command: 'redis-server', args });
  t.after(async () => {
    if (proc.running) await proc.kill();
  });
  return proc;
}

/**
 * A primary, a replica of it (`--replicaof`), and three sentinels monitoring the primary with a
 * quorum of two, a 1 s down-after and a 3 s failover timeout. Resolves once the replica is in sync
 * and every sentinel knows the replica and the other sentinels (so a failover can be agreed).
 */
export async function startSentinelTopology(t: TestContext): Promise<SentinelTopology> {
  const dir = tempDir(t, 'meshrelay-sentinel-');
  const plain = (port: number, data: string) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    data,
  ];
  const primaryPort = await freePort();
  const primary = await startRedis(t, `redis-primary:${primaryPort}`, plain(primaryPort, dir));
  await primary.waitForLine(READY, 10_000);
  const replicaPort = await freePort();
  const replica = await startRedis(t, `redis-replica:${replicaPort}`, [
    ...plain(replicaPort, dir),
    '--replicaof',
    '127.0.0.1',
    String(primaryPort),
  ]);
  await replica.waitForLine(/MASTER <-> REPLICA sync: Finished with success/, 15_000);
  const sentinels: ProcessHandle[] = [];
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    // Sentinel rewrites its configuration file as it learns the topology: one writable file each.
    const conf = join(dir, `sentinel-${i}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER} 3000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
        '',
      ].join('\n'),
    );
    sentinels.push(await startRedis(t, `sentinel-${i}:${port}`, [conf, '--sentinel']));
    ports.push(port);
  }
  for (const sentinel of sentinels) {
    await sentinel.waitForLine(/\+slave slave 127\.0\.0\.1:/, 20_000);
    // Two other sentinels seen: a quorum can form and one of them can be elected leader.
    await waitFor(() => sentinel.lines.filter((l) => /\+sentinel sentinel /.test(l)).length >= 2, {
      timeoutMs: 20_000,
      intervalMs: 100,
      message: `${sentinel.name} did not see the other two sentinels`,
    });
  }
  return {
    primary,
    primaryPort,
    replica,
    replicaPort,
    sentinels,
    sentinelList: ports.map((p) => `127.0.0.1:${p}`).join(','),
  };
}

export interface TlsRedis {
  readonly proc: ProcessHandle;
  readonly port: number;
  readonly caFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  readonly passwordFile: string;
}

/**
 * A redis-server that listens on TLS only (`--port 0 --tls-port P`), asks every client for a
 * certificate signed by its CA, and requires a password. Certificates come from the project's own
 * PKI fixtures: a CA, a server certificate for localhost and 127.0.0.1, and a client certificate.
 */
export async function startTlsRedis(t: TestContext): Promise<TlsRedis> {
  const dir = tempDir(t, 'meshrelay-redis-tls-');
  const f = (name: string) => join(dir, name);
  const pki = createTestPki({ clusters: ['redis-client'] });
  const client = pki.clientCerts['redis-client']!;
  for (const [name, pem] of [
    ['ca.crt', pki.ca.certPem],
    ['server.crt', pki.serverCert.certPem],
    ['server.key', pki.serverCert.keyPem],
    ['client.crt', client.certPem],
    ['client.key', client.keyPem],
  ] as const) {
    writeFileSync(f(name), pem, { mode: 0o600 });
  }
  const password = 'a-redis-password-from-a-file';
  writeFileSync(f('password'), `${password}\n`, { mode: 0o600 });
  const port = await freePort();
  const proc = await startRedis(t, `redis-tls:${port}`, [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--tls-cert-file',
    f('server.crt'),
    '--tls-key-file',
    f('server.key'),
    '--tls-ca-cert-file',
    f('ca.crt'),
    '--tls-auth-clients',
    'yes',
    '--requirepass',
    password,
  ]);
  await proc.waitForLine(READY, 10_000);
  return {
    proc,
    port,
    caFile: f('ca.crt'),
    clientCertFile: f('client.crt'),
    clientKeyFile: f('client.key'),
    passwordFile: f('password'),
  };
}
