import { createHash } from 'node:crypto';
import { canonicalJson } from '@meshrelay/api';
import { planClusters, type ClusterPlan } from './clusters.ts';
import { indexDestinationRules } from './destination-rules.ts';
import { buildLoadAssignment } from './endpoints.ts';
import { FindingList } from './findings.ts';
import { FAULT_FILTER, FAULT_TYPE, HCM_TYPE, ROUTER_FILTER, ROUTER_TYPE, listenerName } from './names.ts';
import { buildRouteConfiguration, virtualServicesFor } from './routes.ts';
import { buildServerListener, planInbound, type InboundPlan } from './server-listeners.ts';
import { collectServiceHosts } from './services.ts';
import type { ProxyLocality, XdsFinding, XdsInput, XdsResource } from './types.ts';

/**
 * A cluster's xDS configuration: Listeners, RouteConfigurations and Clusters by name (the
 * same for every proxy), and the endpoint plans from which each proxy's
 * ClusterLoadAssignments are built for its locality (see `loadAssignmentsFor`). Immutable.
 */
export interface XdsConfig {
  readonly listeners: ReadonlyMap<string, XdsResource>;
  readonly routes: ReadonlyMap<string, XdsResource>;
  readonly clusters: ReadonlyMap<string, XdsResource>;
  readonly endpointPlans: ReadonlyMap<string, ClusterPlan>;
  /** What XdsServer Listeners are built from when a server asks (see `serverListenerFor`). */
  readonly inbound: InboundPlan;
  readonly findings: readonly XdsFinding[];
}

/** Content hash of a resource body: equal content, equal hash, on every machine and after a restart. */
export function hashBody(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex').slice(0, 16);
}

function resource(name: string, body: Record<string, unknown>): XdsResource {
  return Object.freeze({ name, hash: hashBody(body), body });
}

function listenerBody(name: string, usesFault: boolean): Record<string, unknown> {
  const filters = [
    ...(usesFault ? [{ name: FAULT_FILTER, typed_config: { '@type': FAULT_TYPE } }] : []),
    // The router is last: gRPC rejects a listener whose last filter is not terminal.
    { name: ROUTER_FILTER, typed_config: { '@type': ROUTER_TYPE } },
  ];
  const hcm = {
    '@type': HCM_TYPE,
    rds: { route_config_name: name, config_source: { ads: {}, resource_api_version: 'V3' } },
    http_filters: filters,
  };
  return { name, api_listener: { api_listener: hcm } };
}

function sortedMap<T>(entries: Iterable<[string, T]>): Map<string, T> {
  return new Map([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Translates a cluster's applied Istio output and discovered workloads into xDS, as istiod's
 * proxyless gRPC generator would: a Listener and a RouteConfiguration per `host:port`, a
 * Cluster per port and DestinationRule subset. Pure: no I/O, no clock, no randomness.
 * What gRPC clients cannot take is translated to what they take or left out, and listed
 * in `findings`.
 */
export function buildXdsConfig(input: XdsInput): XdsConfig {
  const clusterDomain = input.clusterDomain ?? 'cluster.local';
  const findings = new FindingList();
  const hosts = collectServiceHosts(input);
  const rules = indexDestinationRules(input.output, clusterDomain);
  const ctx = { hosts, rules, clusterDomain, findings };
  const listeners: [string, XdsResource][] = [];
  const routes: [string, XdsResource][] = [];
  const plans: [string, ClusterPlan][] = [];
  for (const host of hosts.values()) {
    const services = virtualServicesFor(host.host, input.output, clusterDomain);
    for (const port of host.ports) {
      const name = listenerName(host.host, port.number);
      const route = buildRouteConfiguration(host.host, port.number, services, ctx);
      routes.push([name, resource(name, route.body)]);
      listeners.push([name, resource(name, listenerBody(name, route.usesFault))]);
    }
    for (const plan of planClusters(host, rules.get(host.host), findings, input.meshTls !== undefined))
      plans.push([plan.name, plan]);
  }
  const inbound = planInbound(input, findings);
  return Object.freeze({
    listeners: sortedMap(listeners),
    routes: sortedMap(routes),
    clusters: sortedMap(plans.map(([name, plan]): [string, XdsResource] => [name, resource(name, plan.body)])),
    endpointPlans: sortedMap(plans),
    inbound,
    findings: findings.list(),
  });
}

/** A stable key for a proxy's locality: proxies with equal keys get equal endpoints. */
export function localityKey(locality: ProxyLocality): string {
  return `${locality.region ?? ''}/${locality.zone ?? ''}/${locality.subZone ?? ''}${locality.labels ? canonicalJson(locality.labels) : ''}`;
}

/**
 * The ClusterLoadAssignment of the named clusters (all when `names` is undefined) for a proxy
 * at `locality`; priorities follow the DestinationRule's locality settings. Unknown names
 * are skipped (the caller decides whether that is an error).
 */
export function loadAssignmentsFor(
  config: XdsConfig,
  locality: ProxyLocality,
  names?: Iterable<string>,
): Map<string, XdsResource> {
  const out = new Map<string, XdsResource>();
  for (const name of names ?? config.endpointPlans.keys()) {
    const plan = config.endpointPlans.get(name);
    if (plan === undefined) continue;
    const endpoints = plan.host.ports.find((p) => p.number === plan.port)?.endpoints ?? [];
    out.set(
      name,
      resource(name, buildLoadAssignment(name, endpoints, plan.subsetLabels, plan.policy, locality, locality.labels)),
    );
  }
  return out;
}

/**
 * The Listener an XdsServer asks for by the address it binds (`grpc/server?xds.resource.listening_address=ip:port`),
 * or undefined when `name` is not such a name or no known workload has that address (nor the Pod `nodeId` names).
 */
export function serverListenerFor(config: XdsConfig, name: string, nodeId?: string): XdsResource | undefined {
  const body = buildServerListener(config.inbound, name, nodeId);
  return body === undefined ? undefined : resource(name, body);
}
