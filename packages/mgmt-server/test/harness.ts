// Test harness for the management server: a real server on localhost:0 and a
// real grpc-js relay client with certificates from the server's own CA.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { Client, credentials, Metadata, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { pino } from 'pino';
import {
  REGISTRATION_SERVICE,
  RELAY_SERVICE,
  buildInputSnapshot,
  encodeSnapshotFramesSync,
  snapshotEncoding,
  type Resource,
  type relay,
} from '@meshrelay/api';
import { createCsr, generateKeyPair } from '@meshrelay/certs';
import { parseServerConfig } from '../src/config.ts';
import { createFileClusterRegistry } from '@meshrelay/registry';
import { startManagementServer, type ManagementServer } from '../src/server.ts';

export interface TestServer extends ManagementServer {
  readonly stateDir: string;
  readonly api: string;
}

/** The header every /api/v1 call needs. */
export function bearer(server: ManagementServer): { authorization: string } {
  return { authorization: `Bearer ${server.admin.token}` };
}

/** GET of an API path with the admin credential; rejects on a non-2xx answer. */
export async function apiGet<T>(server: TestServer, path: string): Promise<T> {
  const res = await fetch(`${server.api}${path}`, { headers: bearer(server) });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function startTestServer(t: TestContext, flags: string[] = []): Promise<TestServer> {
  const stateDir = mkdtempSync(join(tmpdir(), 'meshrelay-server-'));
  const config = parseServerConfig([
    '--relay-host',
    '127.0.0.1',
    '--relay-port',
    '0',
    '--http-host',
    '127.0.0.1',
    '--http-port',
    '0',
    '--metrics-port',
    '0',
    '--state-dir',
    stateDir,
    '--safe-start-window',
    '0',
    '--heartbeat-interval',
    '200',
    '--heartbeat-timeout',
    '1500',
    '--translation-debounce',
    '10',
    '--replica-name',
    'test-0',
    ...flags,
  ]);
  const server = await startManagementServer(config, pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }));
  t.after(async () => {
    await server.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });
  return { ...server, stateDir, api: `http://127.0.0.1:${server.httpPort}` };
}

export interface AgentIdentity {
  readonly cluster: string;
  readonly keyPem: string;
  readonly certPem: string;
  readonly caPem: string;
}

export function relayTarget(server: ManagementServer): string {
  return `localhost:${server.relayPort}`;
}

/** Calls Registration.Register over server-only TLS, with a new key pair unless `keys` is given. */
export function register(
  server: ManagementServer,
  cluster: string,
  token: string,
  csrCluster = cluster,
  keys = generateKeyPair(),
): Promise<AgentIdentity> {
  const csrPem = createCsr({ ...keys, cluster: csrCluster });
  const client = new Client(relayTarget(server), credentials.createSsl(Buffer.from(server.ca.certPem)));
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      REGISTRATION_SERVICE.register.path,
      REGISTRATION_SERVICE.register.requestSerialize,
      REGISTRATION_SERVICE.register.responseDeserialize,
      { cluster, token, csrPem },
      (err: ServiceError | null, res?: relay.v1.IRegisterResponse) => {
        client.close();
        if (err) reject(err);
        else
          resolve({
            cluster,
            keyPem: keys.privateKeyPem,
            certPem: res?.certificatePem ?? '',
            caPem: res?.caBundlePem ?? '',
          });
      },
    );
  });
}

export async function registerCluster(server: ManagementServer, cluster: string): Promise<AgentIdentity> {
  const { token } = await server.registry.register(cluster, {});
  return register(server, cluster, token);
}

export function mtlsClient(
  t: TestContext,
  server: ManagementServer,
  id: { keyPem: string; certPem: string },
  caPem = server.ca.certPem,
): Client {
  const client = new Client(
    relayTarget(server),
    credentials.createSsl(Buffer.from(caPem), Buffer.from(id.keyPem), Buffer.from(id.certPem)),
  );
  t.after(() => client.close());
  return client;
}

export function tlsOnlyClient(t: TestContext, server: ManagementServer): Client {
  const client = new Client(relayTarget(server), credentials.createSsl(Buffer.from(server.ca.certPem)));
  t.after(() => client.close());
  return client;
}

export type PushStream = ClientDuplexStream<relay.v1.IPushRequest, relay.v1.IPushResponse>;
export type PullStream = ClientDuplexStream<relay.v1.IPullRequest, relay.v1.IPullResponse>;

export function openPush(client: Client, metadata = new Metadata()): PushStream {
  const m = RELAY_SERVICE.push;
  const stream: PushStream = client.makeBidiStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, metadata);
  // A stream that ends with a status emits 'error'; tests observe it through streamError/next.
  stream.on('error', () => undefined);
  return stream;
}

export function openPull(client: Client): PullStream {
  const m = RELAY_SERVICE.pull;
  const stream: PullStream = client.makeBidiStreamRequest(m.path, m.requestSerialize, m.responseDeserialize);
  stream.on('error', () => undefined);
  return stream;
}

/** Writes one snapshot (header + chunks) onto a push stream; returns its hash. */
export function pushSnapshot(
  stream: PushStream,
  cluster: string,
  generation: number,
  resources: Resource[],
  epoch = 'epoch-1',
): string {
  const snap = buildInputSnapshot({ cluster, epoch, generation, resources });
  const frames = encodeSnapshotFramesSync({ ...snap, encoding: snapshotEncoding(snap) }, { chunkBytes: 4096 });
  stream.write({ header: frames.header });
  for (const chunk of frames.chunks) stream.write({ chunk });
  return snap.hash;
}

/** Resolves with the first message matching `pick` (heartbeats are skipped), or rejects with the stream's error. */
export function next<T, R>(
  stream: ClientDuplexStream<any, T>,
  pick: (m: T) => R | undefined,
  timeoutMs = 5000,
): Promise<R> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => done(() => reject(new Error(`no matching message within ${timeoutMs} ms`))),
      timeoutMs,
    );
    const onData = (m: T) => {
      const value = pick(m);
      if (value !== undefined) done(() => resolve(value));
    };
    const onError = (err: Error) => done(() => reject(err));
    const onEnd = () => done(() => reject(new Error('stream ended')));
    const done = (settle: () => void) => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('error', onError);
      stream.off('end', onEnd);
      settle();
    };
    stream.on('data', onData);
    stream.on('error', onError);
    stream.on('end', onEnd);
  });
}

/** Resolves with the status error that ends a stream. */
export function streamError(stream: ClientDuplexStream<any, unknown>, timeoutMs = 5000): Promise<ServiceError> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stream did not fail within ${timeoutMs} ms`)), timeoutMs);
    stream.on('data', () => undefined);
    stream.on('error', (err: ServiceError) => {
      clearTimeout(timer);
      resolve(err);
    });
  });
}

export function service(name: string, extra: Record<string, unknown> = {}): Resource {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 8080, protocol: 'TCP' }], ...extra },
  };
}

export function virtualDestination(name: string): Resource {
  return {
    apiVersion: 'networking.gloo.solo.io/v2',
    kind: 'VirtualDestination',
    metadata: { name, namespace: 'default' },
    spec: {
      hosts: [`${name}.global`],
      services: [{ labels: { app: name } }],
      ports: [{ number: 8080, protocol: 'HTTP' }],
    },
  };
}

export interface SeededCluster {
  readonly name: string;
  /** Marks the cluster warm, as if it had sent a snapshot before the restart. */
  readonly warm: boolean;
}

/**
 * Starts a server as a replica restarting onto durable state: the clusters are
 * registered (and marked warm where asked) in its state dir first, so the server
 * starts with them in its registry and no input in memory, which is when the
 * safe-mode gate holds. Returns the server and each cluster's relay token.
 */
export async function startRestartedTestServer(
  t: TestContext,
  clusters: readonly SeededCluster[],
  flags: string[] = [],
): Promise<{ server: TestServer; tokens: ReadonlyMap<string, string> }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'meshrelay-restart-'));
  const tokens = new Map<string, string>();
  try {
    const registry = await createFileClusterRegistry({
      dir: join(stateDir, 'registry'),
      tokenTtlSeconds: 3600,
      tokenOverlapSeconds: 60,
      logger: pino({ level: 'silent' }),
    });
    try {
      for (const cluster of clusters) {
        tokens.set(cluster.name, (await registry.register(cluster.name, {})).token);
        if (cluster.warm) {
          await registry.setCondition(cluster.name, {
            type: 'ClusterWarm',
            status: 'True',
            reason: 'FirstSnapshotReceived',
            message: 'before the restart',
          });
        }
      }
    } finally {
      await registry.close();
    }
    // A later --state-dir overrides the harness's own.
    const server = await startTestServer(t, ['--state-dir', stateDir, ...flags]);
    return { server: { ...server, stateDir }, tokens };
  } finally {
    // Registered after the server's own t.after, so it runs once the server has stopped.
    t.after(() => rmSync(stateDir, { recursive: true, force: true }));
  }
}
