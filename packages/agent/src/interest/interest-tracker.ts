// Learned interest (DESIGN §17): the hosts this cluster's workloads use, told to the management
// plane so that, with interest-scoped outputs, the cluster's output carries their destinations.
// A host new to the tracker goes out at once (a proxy's first request for it waits on the answer);
// every host in use is renewed once per interval, so the plane's lease outlives one quiet window.

import type { relay } from '@meshrelay/api';

export type InterestSource = 'xds' | 'access-log';

export interface InterestTrackerOptions {
  /** Sends on the open Pull stream; false when none is open (everything goes again on the next). */
  readonly send: (report: relay.v1.IInterestReport) => boolean;
  /** How often hosts in use are renewed (at most half the server's --interest-idle). */
  readonly renewIntervalMs: number;
}

/** Half the server's default --interest-idle (10 m): one quiet interval does not drop a lease. */
export const DEFAULT_INTEREST_RENEW_INTERVAL_MS = 300_000;

/** Most hosts in one report; a larger set goes in several. */
const MAX_HOSTS_PER_REPORT = 1000;

/**
 * The host an xDS resource name or an access-log destination names: `host:port` (LDS, RDS, an
 * authority) and `outbound|port|subset|host` (CDS, EDS, Envoy's upstream cluster) give `host`.
 * Undefined for names that name no host.
 */
export function hostOf(name: string): string | undefined {
  let host = name.trim();
  if (host.startsWith('outbound|')) host = host.split('|')[3] ?? '';
  else if (host.startsWith('xdstp:') || host.startsWith('inbound|')) return undefined;
  else {
    const colon = host.lastIndexOf(':');
    if (colon > 0 && /^\d+$/.test(host.slice(colon + 1))) host = host.slice(0, colon);
  }
  host = host.toLowerCase();
  return host === '' || host === 'unknown' || host.includes(':') ? undefined : host;
}

export class InterestTracker {
  readonly #o: InterestTrackerOptions;
  /** Hosts proxies subscribe to now. */
  #subscribed = new Map<string, InterestSource>();
  /** Hosts access logs named since the last renewal. */
  #logged = new Set<string>();
  /** Hosts sent on the current stream since the last renewal: a host not in it goes out at once. */
  readonly #sent = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: InterestTrackerOptions) {
    this.#o = options;
  }

  start(): void {
    this.#timer ??= setInterval(() => this.renew(), this.#o.renewIntervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The names proxies subscribe to now (any xDS type); hosts not sent yet go out at once. */
  subscribed(names: Iterable<string>): void {
    const next = new Map<string, InterestSource>();
    for (const name of names) {
      const host = hostOf(name);
      if (host !== undefined) next.set(host, 'xds');
    }
    // A host no longer subscribed (nor logged) goes out at once when it is used again: its lease
    // may have run out meanwhile.
    for (const host of this.#subscribed.keys()) if (!next.has(host) && !this.#logged.has(host)) this.#sent.delete(host);
    this.#subscribed = next;
    this.#sendNew([...next.keys()], 'xds');
  }

  /** An access log named `destination` (an upstream cluster or an authority). */
  used(destination: string): void {
    const host = hostOf(destination);
    if (host === undefined) return;
    this.#logged.add(host);
    if (!this.#subscribed.has(host)) this.#sendNew([host], 'access-log');
  }

  /** A new Pull stream opened (maybe to another replica): every host in use goes out again. */
  streamOpened(): void {
    this.#sent.clear();
    this.renew();
  }

  /** Renews every host in use: those subscribed now and those logged since the last renewal. */
  renew(): void {
    const hosts: relay.v1.IInterestHost[] = [...this.#subscribed].map(([host, source]) => ({ host, source }));
    for (const host of this.#logged) if (!this.#subscribed.has(host)) hosts.push({ host, source: 'access-log' });
    if (hosts.length > 0 && !this.#sendAll(hosts)) return;
    this.#logged = new Set();
    // What was not in use this interval is sent at once when it is used again.
    this.#sent.clear();
    for (const h of hosts) this.#sent.add(h.host as string);
  }

  #sendNew(hosts: readonly string[], source: InterestSource): void {
    const fresh = hosts.filter((h) => !this.#sent.has(h));
    if (fresh.length === 0) return;
    if (this.#sendAll(fresh.map((host) => ({ host, source })))) for (const h of fresh) this.#sent.add(h);
  }

  #sendAll(hosts: readonly relay.v1.IInterestHost[]): boolean {
    for (let i = 0; i < hosts.length; i += MAX_HOSTS_PER_REPORT)
      if (!this.#o.send({ hosts: hosts.slice(i, i + MAX_HOSTS_PER_REPORT) })) return false;
    return true;
  }
}

/** The names the proxies subscribe to that name hosts: Listeners (`host:port`) and Clusters. */
export function subscribedNames(
  proxies: readonly { readonly subscribed: Readonly<Record<string, readonly string[]>> }[],
): string[] {
  return proxies.flatMap((p) => [...(p.subscribed['lds'] ?? []), ...(p.subscribed['cds'] ?? [])]);
}
