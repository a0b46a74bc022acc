import { createHash } from 'node:crypto';
import { status, type ServerDuplexStream } from '@grpc/grpc-js';
import {
  CLUSTER_TYPE,
  ENDPOINT_TYPE,
  LISTENER_TYPE,
  ROUTE_TYPE,
  SERVER_LISTENER_PREFIX,
  loadAssignmentsFor,
  serverListenerFor,
  type ProxyLocality,
  type XdsConfig,
  type XdsResource,
} from '@meshrelay/xds';
import type { DiscoveryRequest, DiscoveryResponse } from './ads-protos.ts';

/** Short names of the four types, used as metric labels and in `/xds/proxies`. */
export const TYPE_LABELS: Readonly<Record<string, string>> = {
  [LISTENER_TYPE]: 'lds',
  [ROUTE_TYPE]: 'rds',
  [CLUSTER_TYPE]: 'cds',
  [ENDPOINT_TYPE]: 'eds',
};

/** Push order: clusters before their endpoints, listeners before their routes (as Envoy expects). */
export const PUSH_ORDER = [CLUSTER_TYPE, ENDPOINT_TYPE, LISTENER_TYPE, ROUTE_TYPE] as const;

export interface NackRecord {
  readonly typeUrl: string;
  readonly version: string;
  readonly reason: string;
  readonly at: string;
}

/** What one stream knows about one resource type. */
interface TypeState {
  names: readonly string[];
  /** Hashes of the resources last sent, by name: a new config is pushed only when they differ. */
  sent: Map<string, string>;
  version: string;
  nonce: string;
  acked: string;
}

export interface StreamHooks {
  onPush(typeUrl: string, seconds: number): void;
  onNack(record: NackRecord): void;
}

/** One stream as `/xds/proxies` shows it; types by their short names (lds, rds, cds, eds). */
export interface ProxyStatus {
  readonly nodeId: string;
  readonly locality: ProxyLocality;
  readonly subscribed: Readonly<Record<string, readonly string[]>>;
  readonly ackedVersion: Readonly<Record<string, string>>;
  readonly lastNack?: NackRecord;
  readonly nacks: number;
}

export type AdsCall = ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>;

/** The version of a response: a hash of the names and content hashes it carries. */
function versionOf(resources: ReadonlyMap<string, XdsResource>): string {
  const h = createHash('sha256');
  for (const [name, r] of [...resources].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    h.update(`${name}\0${r.hash}\n`);
  return h.digest('hex').slice(0, 16);
}

function sameSent(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, XdsResource>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, r] of b) if (a.get(name) !== r.hash) return false;
  return true;
}

function pick(
  all: ReadonlyMap<string, XdsResource>,
  names: readonly string[],
  wildcard: boolean,
): Map<string, XdsResource> {
  if (wildcard && names.length === 0) return new Map(all);
  const out = new Map<string, XdsResource>();
  for (const name of names) {
    const r = all.get(name);
    if (r !== undefined) out.set(name, r);
  }
  return out;
}

/**
 * One client's aggregated state-of-the-world stream: the node from its first request,
 * the names it subscribed per type, and per type the version and nonce last sent and
 * the version last ACKed. A NACK (matching nonce + error_detail) is recorded and
 * nothing is resent: the client keeps its last good config.
 */
export class AdsStream {
  readonly #call: AdsCall;
  readonly #hooks: StreamHooks;
  readonly #types = new Map<string, TypeState>();
  /** Undefined until the agent has a config: requests are held (answered once it comes), never answered empty. */
  #config: XdsConfig | undefined;
  #nonce = 0;
  nodeId = '';
  locality: ProxyLocality = {};
  lastNack: NackRecord | undefined;
  nacks = 0;

  constructor(call: AdsCall, config: XdsConfig | undefined, hooks: StreamHooks) {
    this.#call = call;
    this.#config = config;
    this.#hooks = hooks;
  }

  /** Handles one DiscoveryRequest: subscription change, ACK or NACK. */
  receive(req: DiscoveryRequest): void {
    if (this.nodeId === '' && req.node !== undefined && req.node !== null) {
      this.nodeId = req.node.id ?? '';
      const l = req.node.locality ?? {};
      this.locality = {
        ...(l.region ? { region: l.region } : {}),
        ...(l.zone ? { zone: l.zone } : {}),
        ...(l.sub_zone ? { subZone: l.sub_zone } : {}),
      };
    }
    const typeUrl = req.type_url ?? '';
    if (TYPE_LABELS[typeUrl] === undefined) return;
    const names = [...(req.resource_names ?? [])].sort();
    const state = this.#types.get(typeUrl);
    const nonce = req.response_nonce ?? '';
    if (state !== undefined && nonce !== '' && nonce !== state.nonce) return; // stale: answers an older response
    if (state !== undefined && nonce !== '') {
      if (req.error_detail !== undefined && req.error_detail !== null) {
        this.#recordNack(typeUrl, state.version, req.error_detail.message ?? '');
      } else {
        state.acked = req.version_info ?? '';
      }
      if (names.join('\n') === state.names.join('\n')) return;
    }
    const next: TypeState = state ?? { names, sent: new Map(), version: '', nonce: '', acked: '' };
    next.names = names;
    this.#types.set(typeUrl, next);
    this.#send(typeUrl, next, true);
  }

  /** Takes a new config; pushes each type whose subscribed resources changed. */
  update(config: XdsConfig): void {
    // The first config answers every request held so far, even one whose answer is empty.
    const first = this.#config === undefined;
    this.#config = config;
    for (const typeUrl of PUSH_ORDER) {
      const state = this.#types.get(typeUrl);
      if (state !== undefined) this.#send(typeUrl, state, first);
    }
  }

  /** Ends the stream with UNAVAILABLE: the client reconnects (keeping what it holds meanwhile). */
  end(details: string): void {
    this.#call.emit('error', { code: status.UNAVAILABLE, details });
  }

  status(): ProxyStatus {
    const subscribed: Record<string, readonly string[]> = {};
    const acked: Record<string, string> = {};
    for (const [typeUrl, s] of this.#types) {
      subscribed[TYPE_LABELS[typeUrl] as string] = s.names;
      acked[TYPE_LABELS[typeUrl] as string] = s.acked;
    }
    return {
      nodeId: this.nodeId,
      locality: this.locality,
      subscribed,
      ackedVersion: acked,
      ...(this.lastNack ? { lastNack: this.lastNack } : {}),
      nacks: this.nacks,
    };
  }

  #recordNack(typeUrl: string, version: string, reason: string): void {
    this.nacks += 1;
    this.lastNack = { typeUrl, version, reason, at: new Date().toISOString() };
    this.#hooks.onNack(this.lastNack);
  }

  #resources(c: XdsConfig, typeUrl: string, names: readonly string[]): Map<string, XdsResource> {
    if (typeUrl === LISTENER_TYPE) {
      const out = pick(c.listeners, names, true);
      // XdsServer backends ask for their own Listener by the address they bind; it is built on request.
      for (const name of names) {
        if (!name.startsWith(SERVER_LISTENER_PREFIX)) continue;
        const listener = serverListenerFor(c, name, this.nodeId);
        if (listener !== undefined) out.set(name, listener);
      }
      return out;
    }
    if (typeUrl === CLUSTER_TYPE) return pick(c.clusters, names, true);
    if (typeUrl === ROUTE_TYPE) return pick(c.routes, names, false);
    return names.length === 0 ? new Map() : loadAssignmentsFor(c, this.locality, names);
  }

  #send(typeUrl: string, state: TypeState, force: boolean): void {
    if (this.#config === undefined) return;
    const started = process.hrtime.bigint();
    const resources = this.#resources(this.#config, typeUrl, state.names);
    if (!force && sameSent(state.sent, resources)) return;
    // Route and endpoint responses need not repeat what the client holds (only Listener and
    // Cluster responses must be complete): a change carries just the resources that changed.
    const changedOnly = !force && (typeUrl === ROUTE_TYPE || typeUrl === ENDPOINT_TYPE);
    const carried = changedOnly
      ? [...resources.values()].filter((r) => state.sent.get(r.name) !== r.hash)
      : [...resources.values()];
    this.#nonce += 1;
    state.version = versionOf(resources);
    state.nonce = String(this.#nonce);
    state.sent = new Map([...resources].map(([name, r]) => [name, r.hash]));
    const body = carried.map((r) => ({ '@type': typeUrl, ...r.body }));
    this.#call.write({ version_info: state.version, resources: body, type_url: typeUrl, nonce: state.nonce });
    this.#hooks.onPush(typeUrl, Number(process.hrtime.bigint() - started) / 1e9);
  }
}
