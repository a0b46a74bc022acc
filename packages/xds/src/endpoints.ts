import { isRecord } from '@meshrelay/api';
import type { Policy } from './destination-rules.ts';
import type { ProxyLocality, ServiceEndpoint } from './types.ts';

interface LocalityGroup {
  readonly region: string;
  readonly zone: string;
  readonly subZone: string;
  readonly endpoints: ServiceEndpoint[];
  priority: number;
  weight: number;
}

function splitLocality(locality: string): [string, string, string] {
  const [region = '', zone = '', subZone = ''] = locality.split('/');
  return [region, zone, subZone];
}

/** istiod's util.LbPriority: 0 same subzone, 1 same zone, 2 same region, 3 elsewhere. */
function lbPriority(proxy: ProxyLocality, g: LocalityGroup): number {
  if ((proxy.region ?? '') !== g.region) return 3;
  if ((proxy.zone ?? '') !== g.zone) return 2;
  if ((proxy.subZone ?? '') !== g.subZone) return 1;
  return 0;
}

/** Renumbers priorities to 0..n-1 keeping their order (a gap would make gRPC wait on an empty priority). */
function compact(groups: LocalityGroup[]): void {
  const distinct = [...new Set(groups.map((g) => g.priority))].sort((a, b) => a - b);
  for (const g of groups) g.priority = distinct.indexOf(g.priority);
}

function applyFailover(
  proxy: ProxyLocality,
  groups: LocalityGroup[],
  failover: readonly Record<string, unknown>[],
): void {
  for (const g of groups) {
    let priority = lbPriority(proxy, g);
    if (priority === 3) {
      // istiod: a region with a failover rule sends elsewhere only to the rule's target region.
      const rule = failover.find((f) => f['from'] === proxy.region);
      if (rule && g.region !== rule['to']) priority = 4;
    }
    g.priority = priority;
  }
  compact(groups);
}

/** The value of a failoverPriority label for the proxy, from its locality (the labels a client node carries). */
function proxyLabel(
  proxy: ProxyLocality,
  proxyLabels: Readonly<Record<string, string>>,
  key: string,
): string | undefined {
  if (key === 'topology.kubernetes.io/region') return proxy.region;
  if (key === 'topology.kubernetes.io/zone') return proxy.zone;
  if (key === 'topology.istio.io/subzone') return proxy.subZone;
  return proxyLabels[key];
}

/**
 * failoverPriority: an endpoint matching the proxy on the first n labels (in order) gets
 * priority len - n; istiod splits a locality's endpoints by priority the same way.
 */
function applyFailoverPriority(
  proxy: ProxyLocality,
  proxyLabels: Readonly<Record<string, string>>,
  groups: LocalityGroup[],
  keys: readonly string[],
): LocalityGroup[] {
  const split = new Map<string, LocalityGroup>();
  for (const g of groups) {
    for (const e of g.endpoints) {
      let matched = 0;
      for (const key of keys) {
        const own = proxyLabel(proxy, proxyLabels, key);
        if (own === undefined || e.labels[key] !== own) break;
        matched++;
      }
      const priority = keys.length - matched;
      const id = `${g.region}/${g.zone}/${g.subZone}#${priority}`;
      const target = split.get(id) ?? {
        region: g.region,
        zone: g.zone,
        subZone: g.subZone,
        endpoints: [],
        priority,
        weight: 0,
      };
      target.endpoints.push(e);
      split.set(id, target);
    }
  }
  const out = [...split.values()];
  compact(out);
  return out;
}

function localityMatches(pattern: string, g: LocalityGroup): boolean {
  const parts = pattern.split('/');
  const own = [g.region, g.zone, g.subZone];
  return parts.every((p, i) => p === '*' || p === own[i]);
}

/**
 * distribute: the proxy's matching `from` rule gives each `to` pattern a share, split among the localities it matches.
 */
function applyDistribute(
  proxy: ProxyLocality,
  groups: LocalityGroup[],
  distribute: readonly Record<string, unknown>[],
): LocalityGroup[] {
  const self: LocalityGroup = {
    region: proxy.region ?? '',
    zone: proxy.zone ?? '',
    subZone: proxy.subZone ?? '',
    endpoints: [],
    priority: 0,
    weight: 0,
  };
  const rule = distribute.find((d) => typeof d['from'] === 'string' && localityMatches(d['from'], self));
  if (rule === undefined || !isRecord(rule['to'])) return groups;
  for (const g of groups) g.weight = 0;
  for (const [pattern, share] of Object.entries(rule['to'])) {
    if (typeof share !== 'number') continue;
    const matching = groups.filter((g) => localityMatches(pattern, g));
    for (const g of matching) g.weight += (share * 1000) / matching.length;
  }
  // A locality the rule gives no share is not used (gRPC ignores weight 0 anyway).
  return groups.filter((g) => g.weight > 0).map((g) => ({ ...g, weight: Math.max(1, Math.round(g.weight)) }));
}

/** Locality groups with priorities and weights for one proxy, as istiod's ApplyLocalityLoadBalancer does. */
function groupsFor(
  endpoints: readonly ServiceEndpoint[],
  policy: Policy,
  proxy: ProxyLocality,
  proxyLabels: Readonly<Record<string, string>>,
): LocalityGroup[] {
  const byLocality = new Map<string, LocalityGroup>();
  for (const e of endpoints) {
    const [region, zone, subZone] = splitLocality(e.locality);
    const key = `${region}/${zone}/${subZone}`;
    const g = byLocality.get(key) ?? { region, zone, subZone, endpoints: [], priority: 0, weight: 0 };
    g.endpoints.push(e);
    byLocality.set(key, g);
  }
  let groups = [...byLocality.values()];
  const lb = isRecord(policy['loadBalancer']) ? policy['loadBalancer'] : {};
  const setting = isRecord(lb['localityLbSetting']) ? lb['localityLbSetting'] : {};
  const enabled = setting['enabled'] !== false;
  // Failover needs outlier detection (istiod: otherwise a proxy would never move down a priority).
  const failoverOn = enabled && isRecord(policy['outlierDetection']);
  if (Array.isArray(setting['distribute']) && enabled) {
    groups = applyDistribute(proxy, groups, setting['distribute'].filter(isRecord));
  } else if (failoverOn && Array.isArray(setting['failoverPriority']) && setting['failoverPriority'].length > 0) {
    groups = applyFailoverPriority(
      proxy,
      proxyLabels,
      groups,
      setting['failoverPriority'].filter((k): k is string => typeof k === 'string'),
    );
  } else if (failoverOn) {
    applyFailover(proxy, groups, Array.isArray(setting['failover']) ? setting['failover'].filter(isRecord) : []);
  }
  return groups;
}

function compareGroups(a: LocalityGroup, b: LocalityGroup): number {
  const ka = `${a.priority}|${a.region}|${a.zone}|${a.subZone}`;
  const kb = `${b.priority}|${b.region}|${b.zone}|${b.subZone}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * The ClusterLoadAssignment of `clusterName` for a proxy at `proxy`: endpoints carrying
 * every subset label, grouped by locality; each locality weighs the sum of its endpoints'
 * weights unless a distribute rule says otherwise.
 */
export function buildLoadAssignment(
  clusterName: string,
  endpoints: readonly ServiceEndpoint[],
  subsetLabels: Readonly<Record<string, string>>,
  policy: Policy,
  proxy: ProxyLocality,
  proxyLabels: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  const selected = endpoints.filter((e) => Object.entries(subsetLabels).every(([k, v]) => e.labels[k] === v));
  const groups = groupsFor(selected, policy, proxy, proxyLabels).sort(compareGroups);
  return {
    cluster_name: clusterName,
    endpoints: groups.map((g) => {
      const eps = [...g.endpoints].sort((a, b) =>
        `${a.address}:${a.port}` < `${b.address}:${b.port}`
          ? -1
          : `${a.address}:${a.port}` > `${b.address}:${b.port}`
            ? 1
            : 0,
      );
      return {
        locality: { region: g.region, zone: g.zone, sub_zone: g.subZone },
        lb_endpoints: eps.map((e) => ({
          endpoint: { address: { socket_address: { address: e.address, port_value: e.port } } },
          health_status: 'HEALTHY',
          load_balancing_weight: { value: e.weight },
        })),
        load_balancing_weight: { value: g.weight > 0 ? g.weight : eps.reduce((n, e) => n + e.weight, 0) },
        priority: g.priority,
      };
    }),
  };
}
