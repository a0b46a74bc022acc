import type { TestContext } from 'node:test';
import { buildInputSnapshot, type AssembledSnapshot, type InputSnapshot, type Resource } from '@meshrelay/api';
import { FileCredentialStore } from '../../src/credential-store.ts';
import type { AppliedOutput } from '../../src/output-writer.ts';
import { RelayClient, type RelayClientOptions } from '../../src/relay-client.ts';
import { captureLogger, tempDir } from './fixtures.ts';
import { testPki } from './test-pki.ts';
import { TestRelayServer, type TestRelayServerOptions } from './test-relay-server.ts';

export function service(name: string, port = 9080): Resource {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'bookinfo' },
    spec: { selector: { app: name }, ports: [{ name: 'http', port, protocol: 'TCP' }] },
  };
}

export function inputSnapshot(generation: number, ...names: string[]): InputSnapshot {
  return buildInputSnapshot({ cluster: 'east', epoch: 'epoch-1', generation, resources: names.map((n) => service(n)) });
}

export async function startServer(t: TestContext, options: Partial<TestRelayServerOptions> = {}): Promise<TestRelayServer> {
  const server = await new TestRelayServer({ pki: testPki(), ...options }).start();
  t.after(() => server.stop());
  return server;
}

export interface ClientHarness {
  readonly client: RelayClient;
  readonly lines: Array<Record<string, unknown>>;
  readonly applied: AssembledSnapshot[];
  readonly stateDir: string;
  setLatest(snapshot: InputSnapshot): void;
}

/** A RelayClient for cluster "east" with test timings: heartbeat 100 ms, timeout 600 ms, backoff 20..200 ms. */
export async function startClient(t: TestContext, addresses: readonly string[], overrides: Partial<RelayClientOptions> & { stateDir?: string } = {}): Promise<ClientHarness> {
  const stateDir = overrides.stateDir ?? (await tempDir(t));
  const { logger, lines } = captureLogger();
  let latest: InputSnapshot | undefined = inputSnapshot(1, 'reviews');
  let held: AppliedOutput | undefined;
  const applied: AssembledSnapshot[] = [];
  const client = new RelayClient({
    cluster: 'east',
    serverAddresses: addresses,
    rootCaPem: () => Promise.resolve(testPki().ca.certPem),
    token: () => Promise.resolve('good-token'),
    credentials: new FileCredentialStore({ stateDir, cluster: 'east', logger }),
    latestSnapshot: () => latest,
    heldOutput: () => held,
    applyOutput: (output) => {
      applied.push(output);
      held = { cluster: 'east', hash: output.hash, provenance: output.provenance, resources: output.resources };
      return Promise.resolve();
    },
    heartbeatIntervalMs: 100,
    heartbeatTimeoutMs: 600,
    maxSnapshotBytes: 1024 * 1024,
    logger,
    backoff: { baseMs: 20, capMs: 200 },
    fencedBackoffMs: 30_000,
    ...overrides,
  });
  client.start();
  t.after(() => client.stop());
  return {
    client,
    lines,
    applied,
    stateDir,
    setLatest(snapshot) {
      latest = snapshot;
      client.snapshotAvailable();
    },
  };
}

export function logged(lines: ReadonlyArray<Record<string, unknown>>, pattern: RegExp): boolean {
  return lines.some((l) => pattern.test(String(l['msg'])));
}
