import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { pino, type Logger } from 'pino';
import { buildOutputSnapshot, type InputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { parseServerConfig, startManagementServer, type ManagementServer } from '@meshrelay/mgmt-server';
import { startFaultProxy, type FaultProxy } from '@meshrelay/testkit';

/**
 * The real management server (in this process, real gRPC over mTLS on
 * localhost:0) with cluster "east" registered, behind a fault proxy. Agents
 * dial `address` (the proxy); `proxy` cuts, freezes or delays their traffic.
 */
export interface RelayUnderTest {
  readonly server: ManagementServer;
  readonly proxy: FaultProxy;
  readonly address: string;
  readonly stateDir: string;
  readonly caPem: string;
  /** East's relay identity token (changes when the test re-registers the cluster). */
  token: string;
  /** Every input snapshot the server stored for east, in order. */
  readonly stored: InputSnapshot[];
  /** Publishes an output for east, as a translation would. */
  publish(resources: readonly Resource[], provenance?: OutputSnapshot['provenance']): OutputSnapshot;
  /** Deregisters and registers east again: its old certificates stop working, a new token is issued. */
  reregister(): Promise<void>;
}

export interface RelayOptions {
  /** Extra meshrelay-server flags. */
  readonly flags?: readonly string[];
  /** The server's logger (default: silent, or TEST_LOG_LEVEL). */
  readonly logger?: Logger;
  /** A first replica whose state directory this one shares (same CA, same registry). */
  readonly replicaOf?: RelayUnderTest & { readonly replicas: Array<() => Promise<void>> };
}

const TEST_FLAGS = [
  '--heartbeat-interval',
  '100',
  '--heartbeat-timeout',
  '600',
  '--safe-start-window',
  '0',
  '--translation-debounce',
  '10',
];

export async function startRelay(
  t: TestContext,
  options: RelayOptions = {},
): Promise<RelayUnderTest & { readonly replicas: Array<() => Promise<void>> }> {
  const first = options.replicaOf;
  const stateDir = first?.stateDir ?? (await mkdtemp(path.join(tmpdir(), 'meshrelay-agent-relay-')));
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
    '--replica-name',
    `test-${path.basename(stateDir)}`,
    ...TEST_FLAGS,
    ...(options.flags ?? []),
  ]);
  const server = await startManagementServer(
    config,
    options.logger ?? pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }),
  );
  const proxy = await startFaultProxy({ port: server.relayPort });
  const replicas: Array<() => Promise<void>> = [];
  const stop = async () => {
    await proxy.close();
    await server.stop();
  };
  // Replicas stop before the first one, which then removes the shared state.
  if (first) {
    first.replicas.push(stop);
  } else {
    t.after(async () => {
      await Promise.all(replicas.map((s) => s()));
      await stop();
      await rm(stateDir, { recursive: true, force: true });
    });
  }
  const stored: InputSnapshot[] = [];
  // Observes what the real intake stores; the store itself does the work.
  const putInput = server.store.putInput.bind(server.store);
  server.store.putInput = (snapshot) => {
    if (snapshot.cluster === 'east') stored.push(snapshot);
    return putInput(snapshot);
  };
  const relay: RelayUnderTest & { readonly replicas: Array<() => Promise<void>> } = {
    replicas,
    server,
    proxy,
    address: proxy.address,
    stateDir,
    caPem: server.ca.certPem,
    token: first ? first.token : (await server.registry.register('east', {})).token,
    stored,
    publish(resources, provenance = []) {
      const output = buildOutputSnapshot({ cluster: 'east', resources, provenance });
      server.outputs.publish(output);
      return output;
    },
    async reregister() {
      await server.registry.deregister('east');
      relay.token = (await server.registry.register('east', {})).token;
    },
  };
  return relay;
}

/** A second replica sharing `first`'s state (CA, registry, token). */
export function startReplica(
  t: TestContext,
  first: Awaited<ReturnType<typeof startRelay>>,
  flags: readonly string[] = [],
): ReturnType<typeof startRelay> {
  return startRelay(t, { replicaOf: first, flags });
}
