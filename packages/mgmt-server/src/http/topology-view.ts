import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import { SOURCES_ANNOTATION, clusterWarmCondition, type OutputSnapshot, type Resource } from '@meshrelay/api';
import type { ClusterRegistry } from '@meshrelay/registry';
import type { SnapshotStore } from '@meshrelay/store';
import type { CarriedContributions } from '../carried-contributions.ts';
import type { ConnectionTracker } from '../connections.ts';
import type { OutputHub } from '../output-hub.ts';
import type { SharedHeldOutputs } from '../shared-held-outputs.ts';
import type { TranslationLoop } from '../translation-loop.ts';

/**
 * Istio's endpoint label naming the cluster an endpoint is in; the translator sets it on every ServiceEntry endpoint.
 */
const ENDPOINT_CLUSTER_LABEL = 'topology.istio.io/cluster';
const DESTINATION_SOURCE_PREFIX = 'VirtualDestination/';

/**
 * What a cluster's input is to this replica: admitted and its agent connected (`current`), admitted
 * while its agent is away (`stale`), replaced by its last known contribution (`carried`, DESIGN §13),
 * or nothing at all (`none`).
 */
export type ContributionState = 'current' | 'stale' | 'carried' | 'none';

/**
 * How a consumer receives a destination: its agent is connected, its output is held by the blast-radius guard, or its
 * agent is away.
 */
export type DeliveryState = 'current' | 'held' | 'disconnected';

export interface TopologyCluster {
  readonly name: string;
  readonly connected: boolean;
  readonly disconnectedSince: string | null;
  readonly warm: boolean;
  readonly warmReason: string;
  readonly skipWarming: boolean;
  /** The safe-mode gate holds translation on this replica waiting for this cluster. */
  readonly holdingTranslation: boolean;
  readonly contribution: ContributionState;
  /** Set while the cluster's contribution is carried: the input carried and since when. */
  readonly carried: { readonly inputHash: string; readonly since: string } | null;
  /** Set while the blast-radius guard holds the cluster's next output, on any replica. */
  readonly heldOutput: {
    readonly hash: string;
    readonly message: string;
    readonly since: string;
    readonly replica: string;
  } | null;
}

export interface TopologyDestination {
  /** `VirtualDestination/<namespace>/<name>@<cluster>`, as outputs name their sources. */
  readonly id: string;
  readonly name: string;
  readonly namespace: string;
  /** The cluster whose input defines it. */
  readonly definedIn: string;
  readonly hosts: readonly string[];
}

/**
 * exporter → destination (`export`: the cluster's endpoints back it) or destination → consumer (`consume`: the
 * cluster's output holds it).
 */
export interface TopologyEdge {
  readonly role: 'export' | 'consume';
  readonly from: string;
  readonly to: string;
  readonly state: ContributionState | DeliveryState;
}

export interface TopologyView {
  readonly replica: string;
  readonly safeMode: { readonly active: boolean; readonly missing: readonly string[] };
  readonly clusters: readonly TopologyCluster[];
  readonly destinations: readonly TopologyDestination[];
  readonly edges: readonly TopologyEdge[];
}

export interface TopologyDeps {
  readonly registry: ClusterRegistry;
  readonly store: SnapshotStore;
  readonly outputs: OutputHub;
  readonly connections: ConnectionTracker;
  readonly loop: TranslationLoop;
  readonly sharedHeld: SharedHeldOutputs;
  readonly contributions: CarriedContributions;
  readonly replica: string;
}

/**
 * One VirtualDestination as one consumer's output holds it: its ServiceEntry's hosts and the clusters of its endpoints.
 */
interface DestinationUse {
  readonly id: string;
  readonly hosts: readonly string[];
  readonly exporters: readonly string[];
}

// Outputs are immutable snapshots: each is read once, however often the UI polls.
const usesByOutput = new WeakMap<OutputSnapshot, readonly DestinationUse[]>();

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function destinationUse(resource: Resource): DestinationUse | undefined {
  const sources = resource.metadata.annotations?.[SOURCES_ANNOTATION]?.split(',') ?? [];
  const id = sources.find((s) => s.startsWith(DESTINATION_SOURCE_PREFIX));
  if (id === undefined) return undefined;
  const spec = isRecord(resource['spec']) ? resource['spec'] : {};
  const hosts = Array.isArray(spec['hosts']) ? spec['hosts'].filter((h): h is string => typeof h === 'string') : [];
  const exporters = new Set<string>();
  for (const endpoint of Array.isArray(spec['endpoints']) ? spec['endpoints'] : []) {
    const labels = isRecord(endpoint) && isRecord(endpoint['labels']) ? endpoint['labels'] : {};
    const cluster = labels[ENDPOINT_CLUSTER_LABEL];
    if (typeof cluster === 'string') exporters.add(cluster);
  }
  return { id, hosts, exporters: [...exporters].sort() };
}

function destinationUses(output: OutputSnapshot): readonly DestinationUse[] {
  let uses = usesByOutput.get(output);
  if (!uses) {
    uses = output.resources
      .filter((r) => r.kind === 'ServiceEntry')
      .map(destinationUse)
      .filter((u) => u !== undefined);
    usesByOutput.set(output, uses);
  }
  return uses;
}

/** `VirtualDestination/<namespace>/<name>@<cluster>` split into its parts. */
function parseDestinationId(id: string): Omit<TopologyDestination, 'hosts'> | undefined {
  const match = /^VirtualDestination\/([^/]*)\/([^@/]+)@(.+)$/.exec(id);
  if (!match) return undefined;
  return { id, namespace: match[1] ?? '', name: match[2] ?? '', definedIn: match[3] ?? '' };
}

async function topologyClusters(deps: TopologyDeps): Promise<TopologyCluster[]> {
  const gate = deps.loop.status().gate;
  const missing = new Set(gate.state === 'held' ? gate.missing : []);
  const carried = new Map(deps.contributions.carried().map((c) => [c.cluster, c]));
  const held = new Map((await deps.sharedHeld.list()).map((h) => [h.cluster, h]));
  const inputs = deps.store.memoryInputs();
  return deps.registry
    .list()
    .map((cluster) => {
      const name = cluster.metadata.name;
      const conn = deps.connections.state(name);
      const connected = conn.push + conn.pull > 0;
      const warm = clusterWarmCondition(cluster);
      const carry = carried.get(name);
      const hold = held.get(name);
      const contribution: ContributionState = carry
        ? 'carried'
        : !inputs.has(name)
          ? 'none'
          : connected
            ? 'current'
            : 'stale';
      return {
        name,
        connected,
        disconnectedSince: conn.disconnectedSince?.toISOString() ?? null,
        warm: warm?.status === 'True',
        warmReason: warm?.reason ?? '',
        skipWarming: cluster.spec.skipWarming === true,
        holdingTranslation: missing.has(name),
        contribution,
        carried: carry ? { inputHash: carry.inputHash, since: carry.since.toISOString() } : null,
        heldOutput: hold
          ? { hash: hold.hash, message: hold.message, since: hold.since.toISOString(), replica: hold.replica }
          : null,
      };
    })
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

/**
 * The mesh as this replica sees it: every registered cluster with its connection, warm and
 * contribution state, every VirtualDestination some cluster's current output holds, and the
 * edges exporter → destination → consumer, each marked with the state of what flows along it.
 * Derived from the outputs (not the inputs) so it shows what clusters actually receive,
 * including what a carried contribution keeps in them.
 */
export async function topologyView(deps: TopologyDeps): Promise<TopologyView> {
  const clusters = await topologyClusters(deps);
  const byName = new Map(clusters.map((c) => [c.name, c]));
  const destinations = new Map<string, TopologyDestination>();
  const edges = new Map<string, TopologyEdge>();
  for (const consumer of clusters) {
    const output = deps.outputs.current(consumer.name);
    if (!output) continue;
    const delivery: DeliveryState = consumer.heldOutput ? 'held' : consumer.connected ? 'current' : 'disconnected';
    for (const use of destinationUses(output)) {
      const parsed = parseDestinationId(use.id);
      if (!parsed) continue;
      if (!destinations.has(use.id)) destinations.set(use.id, { ...parsed, hosts: use.hosts });
      edges.set(`consume ${use.id} ${consumer.name}`, {
        role: 'consume',
        from: use.id,
        to: consumer.name,
        state: delivery,
      });
      for (const exporter of use.exporters) {
        // An endpoint of a cluster that has left the registry is gone from the next output; no node to draw it from.
        const state = byName.get(exporter)?.contribution;
        if (state !== undefined)
          edges.set(`export ${exporter} ${use.id}`, { role: 'export', from: exporter, to: use.id, state });
      }
    }
  }
  const gate = deps.loop.status().gate;
  return {
    replica: deps.replica,
    safeMode: { active: gate.state === 'held', missing: gate.missing },
    clusters,
    destinations: [...destinations.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    edges: [...edges.values()].sort((a, b) => (a.role + a.from + a.to < b.role + b.from + b.to ? -1 : 1)),
  };
}

/** GET /api/v1/topology: read-only, behind the admin token like every /api/ route (request-guard.ts). */
export function registerTopologyRoutes<L extends FastifyBaseLogger>(
  app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, L>,
  deps: TopologyDeps,
): void {
  app.get('/api/v1/topology', async () => topologyView(deps));
}
