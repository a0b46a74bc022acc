/**
 * A load-generator process of the tier bench (forked by bench/tier/run-tier.ts, talks over IPC):
 * one RelayClient (the agent's own relay client) per cluster it was given, each pushing its
 * cluster's generated input snapshot and holding what it applies, with the agent's default
 * limits and heartbeats. Reports every push, ack, received output (kind and bytes on the wire)
 * and applied output (hash, provenance digest, which watched addresses it contains).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import {
  buildInputSnapshot,
  sha256Hex,
  type AssembledSnapshot,
  type InputSnapshot,
  type Provenance,
} from '@meshrelay/api';
import type { AppliedOutput } from '../../packages/agent/src/apply/output-writer.ts';
import { parseAgentConfig } from '../../packages/agent/src/config.ts';
import { FileCredentialStore } from '../../packages/agent/src/credentials/credential-store.ts';
import { RelayClient } from '../../packages/agent/src/relay/relay-client.ts';
import { generateClusterInput, type WorkloadShape } from '../workload.ts';
import { applyKindChange, type KindChange } from './change-kinds.ts';
import { applyEndpointChange, type EndpointChange } from './endpoint-change.ts';
import type { RegisteredCluster } from './processes.ts';

export interface LoadGeneratorPlan {
  readonly shape: WorkloadShape;
  readonly address: string;
  readonly caPem: string;
  /** The clusters this process runs, with their index in the workload. */
  readonly clusters: ReadonlyArray<RegisteredCluster & { readonly index: number }>;
}

/** Parent → load generator. */
export type LoadGeneratorCommand =
  | { readonly t: 'start'; readonly clusters?: readonly string[] }
  | { readonly t: 'change'; readonly change: EndpointChange }
  | { readonly t: 'kind-change'; readonly change: KindChange }
  | { readonly t: 'stop' };

/** Load generator → parent; `at` is Unix ms on this machine's clock. */
export type LoadGeneratorEvent =
  | { readonly t: 'ready'; readonly generatedMs: number }
  | { readonly t: 'offered'; readonly cluster: string; readonly generation: number; readonly at: number }
  | { readonly t: 'pushed'; readonly cluster: string; readonly generation: number; readonly at: number }
  | { readonly t: 'pull-open'; readonly cluster: string; readonly at: number }
  | {
      readonly t: 'acked';
      readonly cluster: string;
      readonly generation: number;
      readonly accepted: boolean;
      readonly code: string;
      readonly at: number;
    }
  | {
      readonly t: 'received';
      readonly cluster: string;
      readonly kind: 'full' | 'delta';
      readonly wireBytes: number;
      readonly at: number;
    }
  | {
      readonly t: 'applied';
      readonly cluster: string;
      readonly hash: string;
      readonly provenance: string;
      readonly found: readonly string[];
      readonly resources: number;
      readonly at: number;
    };

/**
 * sha256 over the sorted "cluster inputHash" lines: equal to the bench's digest of the inputs an output was built from.
 */
export function provenanceDigest(provenance: ReadonlyArray<Pick<Provenance, 'cluster' | 'inputHash'>>): string {
  return sha256Hex(
    provenance
      .map((p) => `${p.cluster} ${p.inputHash}`)
      .sort()
      .join('\n'),
  );
}

function send(event: LoadGeneratorEvent): void {
  process.send?.(event);
}

interface ClusterState {
  latest: InputSnapshot;
  held: AppliedOutput | undefined;
  client: RelayClient;
}

function startClusters(plan: LoadGeneratorPlan, dir: string, watched: readonly string[]): Map<string, ClusterState> {
  const logger = pino({ level: 'warn' }, pino.destination(2));
  const states = new Map<string, ClusterState>();
  for (const { name, token, index } of plan.clusters) {
    // The agent's own defaults (heartbeats, --max-snapshot-bytes): the bench checks the tier fits them.
    const defaults = parseAgentConfig([
      '--cluster',
      name,
      '--state-dir',
      join(dir, name),
      '--token',
      token,
      '--manifests-dir',
      dir,
      '--output-dir',
      dir,
    ]);
    let pullOpen = false;
    const apply = (output: AssembledSnapshot): Promise<void> => {
      state.held = { cluster: name, hash: output.hash, provenance: output.provenance, resources: output.resources };
      const at = Date.now();
      // Looking for the watched addresses happens after the apply finished, off its timed path.
      setImmediate(() => {
        // Nothing watched yet (cold start, the kind changes): no need to encode the output to search it.
        const text = watched.length === 0 ? '' : JSON.stringify(output.resources);
        const found = watched.filter((a) => text.includes(`"${a}"`));
        send({
          t: 'applied',
          cluster: name,
          hash: output.hash,
          provenance: provenanceDigest(output.provenance),
          found,
          resources: output.resources.length,
          at,
        });
      });
      return Promise.resolve();
    };
    const client: RelayClient = new RelayClient({
      cluster: name,
      serverAddresses: [plan.address],
      rootCaPem: () => Promise.resolve(plan.caPem),
      token: () => Promise.resolve(token),
      credentials: new FileCredentialStore({ stateDir: join(dir, name), cluster: name, logger }),
      latestSnapshot: () => state.latest,
      heldOutput: () => state.held,
      applyOutput: apply,
      heartbeatIntervalMs: defaults.heartbeatIntervalMs,
      heartbeatTimeoutMs: defaults.heartbeatTimeoutMs,
      maxSnapshotBytes: defaults.maxSnapshotBytes,
      logger,
      events: {
        onConnectionChange: (status) => {
          if (status.pullConnected && !pullOpen) send({ t: 'pull-open', cluster: name, at: Date.now() });
          pullOpen = status.pullConnected;
        },
        onSnapshotPushed: (s) => send({ t: 'pushed', cluster: name, generation: s.generation, at: Date.now() }),
        onSnapshotAcked: (s, ack) =>
          send({
            t: 'acked',
            cluster: name,
            generation: s.generation,
            accepted: ack.accepted,
            code: ack.errorCode,
            at: Date.now(),
          }),
        onOutputReceived: (r) =>
          send({ t: 'received', cluster: name, kind: r.kind, wireBytes: r.wireBytes, at: Date.now() }),
      },
    });
    const state: ClusterState = { latest: generateClusterInput(plan.shape, index), held: undefined, client };
    states.set(name, state);
  }
  return states;
}

/**
 * Offers the next generation of a cluster's input with `edit` applied (no-op for a cluster this process does not run).
 */
function offer(
  state: ClusterState | undefined,
  edit: (resources: InputSnapshot['resources']) => InputSnapshot['resources'],
): void {
  if (!state) return;
  const before = state.latest;
  state.latest = buildInputSnapshot({
    cluster: before.cluster,
    epoch: before.epoch,
    generation: before.generation + 1,
    resources: edit(before.resources),
  });
  send({ t: 'offered', cluster: before.cluster, generation: state.latest.generation, at: Date.now() });
  state.client.snapshotAvailable();
}

async function main(): Promise<void> {
  const plan = JSON.parse(process.env['TIER_BENCH_PLAN'] ?? '{}') as LoadGeneratorPlan;
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-tier-load-'));
  const watched: string[] = [];
  const generatedAt = performance.now();
  const states = startClusters(plan, dir, watched);
  send({ t: 'ready', generatedMs: performance.now() - generatedAt });
  process.on('message', (command: LoadGeneratorCommand) => {
    if (command.t === 'start') {
      // Without a list every client starts; with one (a staggered cold start), only those named here.
      for (const [name, s] of states)
        if (command.clusters === undefined || command.clusters.includes(name)) s.client.start();
    }
    if (command.t === 'change') {
      watched.push(command.change.address);
      offer(states.get(command.change.cluster), (resources) => applyEndpointChange(resources, command.change));
    }
    if (command.t === 'kind-change')
      offer(states.get(command.change.cluster), (resources) => applyKindChange(resources, command.change));
    if (command.t === 'stop') {
      void Promise.all([...states.values()].map((s) => s.client.stop())).then(() => {
        rmSync(dir, { recursive: true, force: true });
        process.exit(0);
      });
    }
  });
}

// Forked by the bench (fleet.ts); imported elsewhere only for its types and provenanceDigest.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
