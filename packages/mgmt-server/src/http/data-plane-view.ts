import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import { MeshrelayError } from '@meshrelay/api';
import type { ClusterRegistry } from '@meshrelay/registry';
import type { DataPlaneRecord, DataPlaneReports } from '../data-plane-reports.ts';

const QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: { cluster: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' } },
} as const;

/** A registered cluster that never reported: its agent does not serve xDS, or is older, or never connected. */
function unreported(cluster: string): Omit<DataPlaneRecord, 'replica' | 'receivedAt'> & { readonly reported: false } {
  return {
    cluster,
    reported: false,
    agentConnected: false,
    serving: false,
    proxies: [],
    proxiesNotListed: 0,
    findings: [],
  };
}

/**
 * GET /api/v1/xds/proxies[?cluster=]: per registered cluster, the proxies its agent's xDS server
 * has (node, locality, subscribed names and ACKed version per type, NACKs with the last reason)
 * and the translation findings, from whichever replica the agent reports to.
 */
export function registerDataPlaneRoutes<L extends FastifyBaseLogger>(
  app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, L>,
  reports: DataPlaneReports,
  registry: ClusterRegistry,
): void {
  app.get('/api/v1/xds/proxies', { schema: { querystring: QUERY } }, async (req) => {
    const { cluster } = req.query as { cluster?: string };
    const registered = registry.list().map((c) => c.metadata.name);
    if (cluster !== undefined && !registered.includes(cluster)) {
      throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${cluster}" is not registered`);
    }
    const byCluster = new Map(reports.list().map((r) => [r.cluster, r]));
    const names = cluster === undefined ? [...registered].sort() : [cluster];
    return {
      clusters: names.map((name) => {
        const record = byCluster.get(name);
        return record === undefined ? unreported(name) : { ...record, reported: true };
      }),
    };
  });
}

/** meshrelay_xds_reported_* gauges: what agents report of their proxies, per cluster, read at scrape time. */
export function registerDataPlaneMetrics(metrics: Registry, reports: DataPlaneReports): void {
  const registers = [metrics];
  const each = (read: (r: DataPlaneRecord) => number) =>
    function collect(this: Gauge<'cluster'>): void {
      this.reset();
      for (const r of reports.list()) this.set({ cluster: r.cluster }, read(r));
    };
  new Gauge({
    name: 'meshrelay_xds_reported_proxies',
    help: "Proxies connected to each cluster agent's xDS server, as last reported",
    labelNames: ['cluster'],
    registers,
    collect: each((r) => (r.agentConnected ? r.proxies.length + r.proxiesNotListed : 0)),
  });
  new Gauge({
    name: 'meshrelay_xds_reported_nacks',
    help: 'NACKs of the proxies each cluster agent last reported (sum over its proxies)',
    labelNames: ['cluster'],
    registers,
    collect: each((r) => r.proxies.reduce((n, p) => n + p.nacks, 0)),
  });
  new Gauge({
    name: 'meshrelay_xds_reported_findings',
    help: "Fields of a cluster's outputs its proxies cannot take (translated or left out), as last reported",
    labelNames: ['cluster'],
    registers,
    collect: each((r) => r.findings.length),
  });
}
