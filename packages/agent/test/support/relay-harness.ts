import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { buildInputSnapshot, type AssembledSnapshot, type InputSnapshot, type Resource } from '@meshrelay/api';
import { FileCredentialStore } from '../../src/credentials/credential-store.ts';
import type { AppliedOutput } from '../../src/apply/output-writer.ts';
import type { PushAck } from '../../src/relay/push-stream.ts';
import { RelayClient, type RelayClientOptions } from '../../src/relay/relay-client.ts';
import { captureLogger } from './fixtures.ts';
import type { RelayUnderTest } from './real-relay.ts';

export { startRelay, startReplica, type RelayUnderTest } from './real-relay.ts';

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

export interface ClientHarness {
  readonly client: RelayClient;
  readonly lines: Array<Record<string, unknown>>;
  readonly applied: AssembledSnapshot[];
  /** Snapshots the agent sent, and the acks it got, in order. */
  readonly sent: InputSnapshot[];
  readonly acks: PushAck[];
  readonly stateDir: string;
  setLatest(snapshot: InputSnapshot): void;
}

/**
 * A RelayClient for cluster "east" against real relay servers, with test
 * timings: heartbeat 100 ms, timeout 600 ms, backoff 20..200 ms. Its root CA
 * and token are the first relay's (replicas share them). The client is
 * stopped before its state directory is removed, in one after-hook, so no
 * write of the client can race the removal.
 */
export async function startClient(
  t: TestContext,
  relays: readonly RelayUnderTest[],
  overrides: Partial<RelayClientOptions> & { stateDir?: string } = {},
): Promise<ClientHarness> {
  const ownDir = overrides.stateDir === undefined ? await mkdtemp(path.join(tmpdir(), 'meshrelay-agent-')) : undefined;
  const stateDir = overrides.stateDir ?? (ownDir as string);
  const first = relays[0] as RelayUnderTest;
  const { logger, lines } = captureLogger();
  let latest: InputSnapshot | undefined = inputSnapshot(1, 'reviews');
  let held: AppliedOutput | undefined;
  const applied: AssembledSnapshot[] = [];
  const sent: InputSnapshot[] = [];
  const acks: PushAck[] = [];
  const client = new RelayClient({
    cluster: 'east',
    serverAddresses: relays.map((r) => r.address),
    rootCaPem: () => Promise.resolve(first.caPem),
    token: () => Promise.resolve(first.token),
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
    events: {
      onSnapshotPushed: (snapshot) => void sent.push(snapshot),
      onSnapshotAcked: (_snapshot, ack) => void acks.push(ack),
    },
    ...overrides,
  });
  client.start();
  t.after(async () => {
    await client.stop();
    if (ownDir) await rm(ownDir, { recursive: true, force: true });
  });
  return {
    client,
    lines,
    applied,
    sent,
    acks,
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

export function loggedCount(lines: ReadonlyArray<Record<string, unknown>>, pattern: RegExp): number {
  return lines.filter((l) => pattern.test(String(l['msg']))).length;
}

/** True once the agent holds (acked) the output the server currently has for it. */
export function settled(relay: RelayUnderTest): boolean {
  const current = relay.server.outputs.current('east');
  return current !== undefined && relay.server.connections.applied('east') === current.hash;
}
