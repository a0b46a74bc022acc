/**
 * The Markdown section `npm run bench -- --xds` writes to bench/RESULTS.md: per tier, the ADS
 * server's cost of one endpoint change against its first full push, measured in the same run.
 */
import type { MachineInfo } from './report.ts';
import type { XdsTierResult } from './xds.ts';

export interface XdsReport {
  readonly startedAt: Date;
  readonly totalSeconds: number;
  readonly machine: MachineInfo;
  readonly loadAverage1mAtEnd: number;
  readonly tiers: readonly XdsTierResult[];
}

/** The q-quantile (nearest rank) of `values`; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

const ms = (v: number): string => (v >= 100 ? `${v.toFixed(0)} ms` : `${v.toFixed(1)} ms`);
const kib = (bytes: number): string => (bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${bytes.toFixed(0)} B`);
const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;

function workloadLine(r: XdsTierResult): string {
  const s = r.shape;
  const o = r.options;
  return (
    `**tier ${r.tier}** (${s.clusters} clusters × ${s.servicesPerCluster} services × ${s.endpointsPerService} endpoints, every ${s.exportEvery}th exported): ` +
    `cluster-0's applied output (${r.outputResources.toLocaleString('en-US')} resources) and discovered input (${r.discoveredResources.toLocaleString('en-US')} resources) ` +
    `give ${r.listeners.toLocaleString('en-US')} Listeners/RouteConfigurations and ${r.clusters.toLocaleString('en-US')} Clusters/ClusterLoadAssignments ` +
    `(\`buildXdsConfig\` ${ms(r.buildMs)}). ${o.streams} ADS streams: ${o.realClients} real grpc-js-xds clients (processes, resolving \`xds:///${r.changedListener}\`) and ` +
    `${o.streams - o.realClients} raw streams, each subscribing the changed host and ${o.hostsPerStream - 1} others (Listener, RouteConfiguration, Clusters and endpoints by name). ` +
    `${r.changeMs.length} changes: one endpoint of svc-000 in cluster-0 gets a new address (EndpointSlice and Pod), the config is rebuilt and set.`
  );
}

function figureRows(r: XdsTierResult): string[] {
  const fullBytes = quantile(r.fullPushBytes, 0.5);
  const p50 = quantile(r.changeMs, 0.5);
  const p99 = quantile(r.changeMs, 0.99);
  const bytesP50 = quantile(r.changeBytes, 0.5);
  const perProxyKiB = (r.rssStreamsKiB - r.rssIdleKiB) / r.options.streams;
  const everyone = r.ackedPerChange.every((n) => n === r.options.streams);
  return [
    `| first full push: every stream ACKed all four types (the baseline) | ${ms(r.fullPushMs)} to ${r.options.streams} streams | — | 1× |`,
    `| one endpoint change → every subscribed stream ACKed it | p50 ${ms(p50)}, p99 ${ms(p99)}, max ${ms(Math.max(...r.changeMs))} (n = ${r.changeMs.length}; ${everyone ? 'every stream ACKed every change' : 'NOT every stream ACKed every change'}) | first full push ${ms(r.fullPushMs)} | p50 ${ratio(p50, r.fullPushMs)}, p99 ${ratio(p99, r.fullPushMs)} |`,
    `| … of which the agent rebuilding the config (\`buildXdsConfig\`) | p50 ${ms(quantile(r.changeBuildMs, 0.5))}, p99 ${ms(quantile(r.changeBuildMs, 0.99))} | one change ${ms(p50)} | p50 ${ratio(quantile(r.changeBuildMs, 0.5), p50)} |`,
    `| bytes per proxy for the first full push (raw streams) | p50 ${kib(fullBytes)}, max ${kib(Math.max(...r.fullPushBytes))} | — | 1× |`,
    `| bytes per proxy per change (raw streams) | p50 ${kib(bytesP50)}, p99 ${kib(quantile(r.changeBytes, 0.99))}, max ${kib(Math.max(...r.changeBytes))} (n = ${r.changeBytes.length}) | first full push p50 ${kib(fullBytes)} | p50 ${ratio(bytesP50, fullBytes)} |`,
    `| server RSS per connected proxy ((RSS with ${r.options.streams} streams − RSS with 0) / ${r.options.streams}) | ${perProxyKiB.toFixed(1)} KiB | RSS with 0 streams ${(r.rssIdleKiB / 1024).toFixed(1)} MiB, with ${r.options.streams} ${(r.rssStreamsKiB / 1024).toFixed(1)} MiB | ${ratio(r.rssStreamsKiB, r.rssIdleKiB)} of idle |`,
  ];
}

export function renderXdsSection(r: XdsReport): string {
  const m = r.machine;
  const lines = [
    "# xDS: the agent's ADS server, one endpoint change (`npm run bench -- --xds`)",
    '',
    `Run on ${r.startedAt.toISOString()}: ${m.cpuModel} × ${m.cores} cores, ${(m.totalMemoryBytes / 1024 ** 3).toFixed(1)} GiB RAM, Node ${m.node}; ` +
      `1-minute load average ${m.loadAverage1m.toFixed(2)} at start, ${r.loadAverage1mAtEnd.toFixed(2)} at end (the machine is shared: absolute times move with load, ratios less). Took ${r.totalSeconds.toFixed(0)} s.`,
    '',
    "The real `AdsServer` of the agent runs in a process of its own, fed the cluster's config as the agent feeds it; the streams connect before it has a config (the agent holds them until its first), so the first full push answers every stream at once. " +
      "Times run in the server process from setting the config (for a change: from taking the changed input, rebuild included) until the last stream's ACK of it arrived. " +
      "Bytes are serialized DiscoveryResponses a raw stream received (gRPC and HTTP/2 framing not counted). RSS is the server process's VmRSS after two full GCs. " +
      "The raw streams share the bench process's one event loop, so on a loaded machine an ACK also waits for the streams handled before it.",
  ];
  for (const t of r.tiers) {
    lines.push(
      '',
      `## Tier ${t.tier}`,
      '',
      workloadLine(t),
      '',
      '| figure | measured | baseline (same run) | ratio |',
      '|---|---|---|---:|',
      ...figureRows(t),
    );
  }
  lines.push(
    '',
    "State of the world: a change re-sends every subscribed resource of the changed type (here each stream's ClusterLoadAssignments), not only the changed one, so bytes per change grow with what a proxy subscribes; the versions keep streams whose resources did not change from being pushed at all.",
  );
  return lines.join('\n');
}
