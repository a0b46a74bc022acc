// What each agent's xDS server sees (its proxies, their ACKs and NACKs, what its translation
// could not give them), as the agents report it over their Pull streams. An agent talks to one
// replica; every replica answers `meshctl proxy list` and writes statuses, so each mirrors the
// reports it receives into the shared document store and reads the others' from there.

import type { Logger } from 'pino';
import type { relay } from '@meshrelay/api';
import type { SharedDocumentStore } from '@meshrelay/registry';

/** Bounds the server keeps whatever an agent sends (an agent's own bounds are the same). */
const LIMITS = { proxies: 500, namesPerType: 20, findings: 200, text: 512 } as const;
const TYPES = new Set(['lds', 'rds', 'cds', 'eds']);
const CHECK_INTERVAL_MS = 1000;
/** Mirror writes per cluster are coalesced: proxies ACK on every push, the store need not see each. */
const MIRROR_DELAY_MS = 2000;

export interface DataPlaneTypeState {
  readonly names: readonly string[];
  readonly subscribed: number;
  readonly ackedVersion: string;
}

export interface DataPlaneProxy {
  readonly nodeId: string;
  readonly locality: string;
  readonly types: Readonly<Record<string, DataPlaneTypeState>>;
  readonly nacks: number;
  readonly lastNack?: {
    readonly typeUrl: string;
    readonly version: string;
    readonly reason: string;
    readonly at: string;
  };
}

export interface DataPlaneFinding {
  readonly source: string;
  readonly sources: readonly string[];
  readonly field: string;
  readonly message: string;
}

/** One cluster's last report, as the replica that received it keeps and shares it. */
export interface DataPlaneRecord {
  readonly cluster: string;
  readonly replica: string;
  readonly receivedAt: string;
  /** Whether that agent's Pull stream to that replica is still open. */
  readonly agentConnected: boolean;
  readonly serving: boolean;
  readonly proxies: readonly DataPlaneProxy[];
  readonly proxiesNotListed: number;
  readonly findings: readonly DataPlaneFinding[];
}

function clip(text: string | null | undefined): string {
  const t = text ?? '';
  return t.length <= LIMITS.text ? t : `${t.slice(0, LIMITS.text - 1)}…`;
}

function proxyOf(p: relay.v1.IXdsProxy): DataPlaneProxy {
  const types: Record<string, DataPlaneTypeState> = {};
  for (const [type, state] of Object.entries(p.types ?? {})) {
    if (!TYPES.has(type)) continue;
    const names = (state.names ?? []).slice(0, LIMITS.namesPerType).map(clip);
    types[type] = {
      names,
      subscribed: Math.max(Number(state.subscribed ?? 0), names.length),
      ackedVersion: clip(state.ackedVersion),
    };
  }
  const nack = p.lastNack;
  return {
    nodeId: clip(p.nodeId),
    locality: clip(p.locality),
    types,
    nacks: Number(p.nacks ?? 0),
    ...(nack
      ? {
          lastNack: {
            typeUrl: clip(nack.typeUrl),
            version: clip(nack.version),
            reason: clip(nack.reason),
            at: new Date(Number(nack.atUnixMs ?? 0)).toISOString(),
          },
        }
      : {}),
  };
}

/**
 * The record of a report as received: bounded again here (an agent is not trusted to bound
 * it), with what was left out counted in `proxiesNotListed` rather than dropped silently.
 */
export function recordOfReport(
  cluster: string,
  replica: string,
  report: relay.v1.IDataPlaneReport,
  receivedAt: Date,
): DataPlaneRecord {
  const proxies = report.proxies ?? [];
  return {
    cluster,
    replica,
    receivedAt: receivedAt.toISOString(),
    agentConnected: true,
    serving: report.serving === true,
    proxies: proxies.slice(0, LIMITS.proxies).map(proxyOf),
    proxiesNotListed: Number(report.proxiesNotListed ?? 0) + Math.max(0, proxies.length - LIMITS.proxies),
    findings: (report.findings ?? []).slice(0, LIMITS.findings).map((f) => ({
      source: clip(f.source),
      sources: (f.sources ?? []).slice(0, 20).map(clip),
      field: clip(f.field),
      message: clip(f.message),
    })),
  };
}

/** A replica name as one DNS label of a document name. */
function label(replica: string): string {
  const l = replica
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return l === '' ? 'replica' : l;
}

/** The freshest view of a cluster: a connected agent's report first, then the latest received. */
function fresher(a: DataPlaneRecord, b: DataPlaneRecord): DataPlaneRecord {
  if (a.agentConnected !== b.agentConnected) return a.agentConnected ? a : b;
  return a.receivedAt >= b.receivedAt ? a : b;
}

export class DataPlaneReports {
  readonly #documents: SharedDocumentStore;
  readonly #replica: string;
  readonly #logger: Logger;
  readonly #local = new Map<string, DataPlaneRecord>();
  /** Other replicas' records by document name. */
  readonly #remote = new Map<string, DataPlaneRecord>();
  readonly #listeners = new Set<() => void>();
  readonly #dirty = new Set<string>();
  #flushTimer: NodeJS.Timeout | undefined;
  #stopWatch: (() => void) | undefined;
  #writes: Promise<void> = Promise.resolve();
  #version = 0;

  constructor(documents: SharedDocumentStore, replica: string, logger: Logger) {
    this.#documents = documents;
    this.#replica = replica;
    this.#logger = logger;
  }

  /** Bumps on every change of what `list()` returns; callers cache on it. */
  get version(): number {
    return this.#version;
  }

  /** Drops this replica's records of an earlier run (its memory starts empty) and reads the others'. */
  start(): void {
    this.#queue(async () => {
      for (const { name } of await this.#documents.list())
        if (name.endsWith(`.${label(this.#replica)}`)) await this.#documents.delete(name);
    });
    this.#stopWatch = this.#documents.watch(
      (names) => this.#queue(() => this.#readRemote(names)),
      CHECK_INTERVAL_MS,
      (err) => this.#logger.warn({ err }, `could not list data-plane reports in ${this.#documents.location}`),
    );
  }

  async stop(): Promise<void> {
    this.#stopWatch?.();
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#flush();
    await this.#writes;
  }

  record(cluster: string, report: relay.v1.IDataPlaneReport, now: Date): void {
    this.#local.set(cluster, recordOfReport(cluster, this.#replica, report, now));
    this.#changed(cluster);
  }

  /** The cluster's Pull stream to this replica ended: its last report stays, marked as such. */
  disconnected(cluster: string): void {
    const record = this.#local.get(cluster);
    if (!record || !record.agentConnected) return;
    this.#local.set(cluster, { ...record, agentConnected: false });
    this.#changed(cluster);
  }

  /** A deregistered cluster: nothing of it is kept here. */
  forget(cluster: string): void {
    if (!this.#local.delete(cluster)) return;
    this.#changed(cluster);
  }

  /** One record per cluster, the freshest any replica holds, sorted by cluster. */
  list(): DataPlaneRecord[] {
    const byCluster = new Map<string, DataPlaneRecord>();
    for (const record of [...this.#remote.values(), ...this.#local.values()]) {
      const seen = byCluster.get(record.cluster);
      byCluster.set(record.cluster, seen ? fresher(seen, record) : record);
    }
    return [...byCluster.values()].sort((a, b) => (a.cluster < b.cluster ? -1 : 1));
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(cluster: string | undefined): void {
    this.#version += 1;
    if (cluster !== undefined) {
      this.#dirty.add(cluster);
      this.#flushTimer ??= setTimeout(() => {
        this.#flushTimer = undefined;
        this.#flush();
      }, MIRROR_DELAY_MS);
      this.#flushTimer.unref();
    }
    for (const listener of this.#listeners) listener();
  }

  #flush(): void {
    for (const cluster of this.#dirty) {
      const record = this.#local.get(cluster);
      const name = `${cluster}.${label(this.#replica)}`;
      this.#queue(() =>
        record ? this.#documents.put(name, Buffer.from(JSON.stringify(record))) : this.#documents.delete(name),
      );
    }
    this.#dirty.clear();
  }

  async #readRemote(names: readonly string[]): Promise<void> {
    let changed = false;
    for (const name of names) {
      if (name.endsWith(`.${label(this.#replica)}`)) continue;
      const body = await this.#documents.get(name);
      if (body === undefined) {
        changed = this.#remote.delete(name) || changed;
        continue;
      }
      try {
        const record = JSON.parse(body.toString('utf8')) as DataPlaneRecord;
        if (typeof record.cluster !== 'string' || !Array.isArray(record.proxies) || !Array.isArray(record.findings))
          throw new Error('not a data-plane record');
        this.#remote.set(name, record);
        changed = true;
      } catch (err) {
        this.#logger.warn(
          { err, name },
          `data-plane report ${name} in ${this.#documents.location} is unreadable; ignored`,
        );
      }
    }
    if (changed) this.#changed(undefined);
  }

  #queue(task: () => Promise<void>): void {
    this.#writes = this.#writes
      .then(task)
      .catch((err: unknown) =>
        this.#logger.warn({ err }, 'could not share data-plane reports with the other replicas'),
      );
  }
}
