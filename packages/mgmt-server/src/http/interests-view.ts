import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import type { ClusterRegistry } from '@meshrelay/registry';
import type { InterestLeases } from '../interests/interest-leases.ts';
import type { ScopedOutput } from '../interests/output-scope.ts';

export interface InterestsViewSources {
  readonly leases: InterestLeases;
  /** Whether outputs are scoped (--interest-scoped-outputs). */
  readonly scoped: boolean;
  /** Per cluster, the VirtualDestinations its last output carried or left out, and why. */
  readonly scoping: () => ReadonlyMap<string, ScopedOutput>;
  readonly registry: ClusterRegistry;
}

/**
 * GET /api/v1/interests: per registered cluster, the leases it holds (host, how it was learned,
 * when it expires) and the VirtualDestinations its output carries with the reason; per
 * VirtualDestination, the clusters that receive it and those that do not.
 */
export function registerInterestRoutes<L extends FastifyBaseLogger>(
  app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, L>,
  sources: InterestsViewSources,
): void {
  app.get('/api/v1/interests', async () => {
    const leases = new Map(sources.leases.list().map((c) => [c.cluster, c.leases]));
    const scoping = sources.scoping();
    const destinations = new Map<string, { hosts: Set<string>; receiving: string[]; notReceiving: string[] }>();
    const clusters = sources.registry
      .list()
      .map((c) => c.metadata.name)
      .sort()
      .map((cluster) => {
        const scoped = scoping.get(cluster)?.destinations ?? [];
        for (const d of scoped) {
          const entry = destinations.get(d.destination) ?? { hosts: new Set(), receiving: [], notReceiving: [] };
          for (const h of d.hosts) entry.hosts.add(h);
          (d.reason === 'none' ? entry.notReceiving : entry.receiving).push(cluster);
          destinations.set(d.destination, entry);
        }
        return {
          cluster,
          leases: (leases.get(cluster) ?? []).map((l) => ({
            host: l.host,
            source: l.source,
            renewedAt: new Date(l.renewedAt).toISOString(),
            expiresAt: new Date(l.expiresAt).toISOString(),
          })),
          destinations: scoped.map((d) => ({ destination: d.destination, reason: d.reason })),
        };
      });
    return {
      scoped: sources.scoped,
      clusters,
      destinations: [...destinations]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([destination, d]) => ({
          destination,
          hosts: [...d.hosts].sort(),
          receiving: d.receiving,
          notReceiving: d.notReceiving,
        })),
    };
  });
}

/** meshrelay_interest_leases{cluster}: live leases per cluster, read at scrape time. */
export function registerInterestMetrics(metrics: Registry, leases: InterestLeases): void {
  new Gauge({
    name: 'meshrelay_interest_leases',
    help: 'Learned interests (hosts in use) each cluster holds a live lease on',
    labelNames: ['cluster'],
    registers: [metrics],
    collect(this: Gauge<'cluster'>): void {
      this.reset();
      for (const { cluster, leases: held } of leases.list()) this.set({ cluster }, held.length);
    },
  });
}
