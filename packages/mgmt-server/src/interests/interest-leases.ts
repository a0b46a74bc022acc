// Learned interests (DESIGN §17): per cluster, the hosts its agent reported in use, each held as a
// lease that a report renews and that expires after the idle time. Leases live in the plane-wide
// shared document store, one document per cluster, so they survive restarts of the server and the
// agent and every replica scopes outputs the same way whichever replica an agent talks to.

import type { Logger } from 'pino';
import type { relay } from '@meshrelay/api';
import type { SharedDocumentStore } from '@meshrelay/registry';

/** What an agent may say in one report (more is cut: an agent is not trusted to bound itself). */
const MAX_HOSTS_PER_REPORT = 2000;
const MAX_HOSTS_PER_CLUSTER = 5000;
const MAX_HOST_LENGTH = 253;
const SOURCES = new Set(['xds', 'access-log']);
/** Writes of one cluster's leases are coalesced: a burst of first calls costs one write. */
const WRITE_DELAY_MS = 500;

export interface InterestLease {
  readonly host: string;
  /** How it was learned: `xds` or `access-log`. */
  readonly source: string;
  /** Epoch ms of the last report that named it. */
  readonly renewedAt: number;
  /** Epoch ms after which it is no longer held unless renewed. */
  readonly expiresAt: number;
}

interface LeaseDocument {
  readonly cluster: string;
  readonly leases: readonly InterestLease[];
}

export interface InterestLeasesOptions {
  readonly documents: SharedDocumentStore;
  /** A lease not renewed for this long expires. */
  readonly idleMs: number;
  readonly logger: Logger;
  /** Epoch ms (tests pass their own clock). */
  readonly now?: () => number;
  /** How often expiry and the other replicas' documents are looked at (default min(1 s, idle / 4)). */
  readonly checkIntervalMs?: number;
}

/** A host as a ServiceEntry names it: lower case, no port, bounded. */
function normalHost(raw: string | null | undefined): string | undefined {
  const host = (raw ?? '').trim().toLowerCase();
  if (host === '' || host.length > MAX_HOST_LENGTH || !/^[a-z0-9*]([-a-z0-9.*]*[a-z0-9])?$/.test(host))
    return undefined;
  return host;
}

/**
 * The lease store. Changes of what `held()` returns (a new host, an expiry, another replica's
 * write) are announced through `onChange` with the clusters concerned, at once for a new host
 * (a first call waits on it) and within the check interval for an expiry.
 */
export class InterestLeases {
  readonly #o: InterestLeasesOptions;
  readonly #now: () => number;
  readonly #leases = new Map<string, Map<string, InterestLease>>();
  readonly #listeners = new Set<(clusters: readonly string[]) => void>();
  readonly #dirty = new Set<string>();
  #writeTimer: NodeJS.Timeout | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #stopWatch: (() => void) | undefined;
  #writes: Promise<void> = Promise.resolve();
  #version = 0;

  constructor(options: InterestLeasesOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Bumps whenever what `held()` returns may have changed. */
  get version(): number {
    return this.#version;
  }

  /** Reads the stored leases (before the first translation), then watches the store and expiry. */
  async start(): Promise<void> {
    for (const { name } of await this.#o.documents.list()) await this.#read(name);
    const interval = this.#o.checkIntervalMs ?? Math.min(1000, Math.max(50, this.#o.idleMs / 4));
    this.#stopWatch = this.#o.documents.watch(
      (names) => this.#queue(() => this.#readChanged(names)),
      interval,
      (err) => this.#o.logger.warn({ err }, `could not list interest leases in ${this.#o.documents.location}`),
    );
    this.#sweepTimer = setInterval(() => this.#sweep(), interval);
    this.#sweepTimer.unref();
  }

  async stop(): Promise<void> {
    this.#stopWatch?.();
    clearInterval(this.#sweepTimer);
    clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
    this.#flush();
    await this.#writes;
  }

  /**
   * Renews (or takes) `cluster`'s lease on each reported host. Returns the hosts that were not
   * held before: the caller's output for that cluster changes only for those.
   */
  renew(cluster: string, report: relay.v1.IInterestReport): string[] {
    const now = this.#now();
    const leases = this.#leases.get(cluster) ?? new Map<string, InterestLease>();
    const added: string[] = [];
    for (const entry of (report.hosts ?? []).slice(0, MAX_HOSTS_PER_REPORT)) {
      const host = normalHost(entry.host);
      if (host === undefined) continue;
      const before = leases.get(host);
      if (before === undefined && leases.size >= MAX_HOSTS_PER_CLUSTER) continue;
      const source = SOURCES.has(entry.source ?? '') ? (entry.source as string) : 'xds';
      if (before === undefined || before.expiresAt <= now) added.push(host);
      leases.set(host, { host, source, renewedAt: now, expiresAt: now + this.#o.idleMs });
    }
    this.#leases.set(cluster, leases);
    this.#dirty.add(cluster);
    this.#scheduleWrite(added.length > 0 ? 0 : WRITE_DELAY_MS);
    if (added.length > 0) this.#changed([cluster]);
    return added;
  }

  /** The hosts `cluster` holds a lease on now. */
  held(cluster: string): ReadonlySet<string> {
    const now = this.#now();
    const out = new Set<string>();
    for (const lease of this.#leases.get(cluster)?.values() ?? []) if (lease.expiresAt > now) out.add(lease.host);
    return out;
  }

  /** Every cluster's live leases, sorted by cluster then host. */
  list(): { cluster: string; leases: InterestLease[] }[] {
    const now = this.#now();
    return [...this.#leases.keys()].sort().map((cluster) => ({
      cluster,
      leases: [...(this.#leases.get(cluster)?.values() ?? [])]
        .filter((l) => l.expiresAt > now)
        .sort((a, b) => (a.host < b.host ? -1 : 1)),
    }));
  }

  /** A deregistered cluster: its leases go, here and in the store. */
  forget(cluster: string): void {
    if (!this.#leases.delete(cluster)) return;
    this.#dirty.delete(cluster);
    this.#queue(() => this.#o.documents.delete(cluster));
    this.#changed([cluster]);
  }

  onChange(listener: (clusters: readonly string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(clusters: readonly string[]): void {
    this.#version += 1;
    for (const listener of this.#listeners) listener(clusters);
  }

  /** Drops expired leases; announces the clusters that lost one. */
  #sweep(): void {
    const now = this.#now();
    const lost: string[] = [];
    for (const [cluster, leases] of this.#leases) {
      let expired = false;
      for (const [host, lease] of leases)
        if (lease.expiresAt <= now) {
          leases.delete(host);
          expired = true;
        }
      if (expired) lost.push(cluster);
    }
    if (lost.length > 0) this.#changed(lost);
  }

  #scheduleWrite(delayMs: number): void {
    if (this.#writeTimer !== undefined && delayMs > 0) return;
    clearTimeout(this.#writeTimer);
    this.#writeTimer = setTimeout(() => {
      this.#writeTimer = undefined;
      this.#flush();
    }, delayMs);
    this.#writeTimer.unref();
  }

  #flush(): void {
    for (const cluster of this.#dirty) {
      if (!this.#leases.has(cluster)) continue;
      const doc: LeaseDocument = { cluster, leases: [...(this.#leases.get(cluster)?.values() ?? [])] };
      this.#queue(() => this.#o.documents.put(cluster, Buffer.from(JSON.stringify(doc))));
    }
    this.#dirty.clear();
  }

  async #readChanged(names: readonly string[]): Promise<void> {
    const changed: string[] = [];
    for (const name of names) if (await this.#read(name)) changed.push(name);
    if (changed.length > 0) this.#changed(changed);
  }

  /**
   * Merges a stored document into memory, lease by lease (the later expiry wins, so two replicas
   * renewing one cluster never shorten each other's leases). Returns whether a host became held.
   */
  async #read(name: string): Promise<boolean> {
    const body = await this.#o.documents.get(name);
    if (body === undefined) return false;
    let doc: LeaseDocument;
    try {
      doc = JSON.parse(body.toString('utf8')) as LeaseDocument;
      if (typeof doc.cluster !== 'string' || !Array.isArray(doc.leases)) throw new Error('not an interest document');
    } catch (err) {
      this.#o.logger.warn({ err, name }, `interest leases ${name} in ${this.#o.documents.location} are unreadable`);
      return false;
    }
    const now = this.#now();
    const leases = this.#leases.get(doc.cluster) ?? new Map<string, InterestLease>();
    let gained = false;
    for (const lease of doc.leases) {
      const host = normalHost(lease.host);
      if (host === undefined || typeof lease.expiresAt !== 'number' || lease.expiresAt <= now) continue;
      const mine = leases.get(host);
      if (mine !== undefined && mine.expiresAt >= lease.expiresAt) continue;
      if (mine === undefined || mine.expiresAt <= now) gained = true;
      leases.set(host, {
        host,
        source: String(lease.source),
        renewedAt: Number(lease.renewedAt),
        expiresAt: lease.expiresAt,
      });
    }
    this.#leases.set(doc.cluster, leases);
    return gained;
  }

  #queue(task: () => Promise<void>): void {
    this.#writes = this.#writes
      .then(task)
      .catch((err: unknown) => this.#o.logger.warn({ err }, 'could not share interest leases with the other replicas'));
  }
}
