/**
 * A small multi-cluster world for the incremental translation property test, and seeded random
 * changes to it: endpoints, Services, Pods, VirtualDestinations, RouteTables, AccessPolicies,
 * clusters appearing and disappearing, VIPs, registry info, gateways, workspaces (management
 * Workspaces and a WorkspaceSettings exporting by labels), and invalid inputs.
 */
import type { Resource } from '@meshrelay/api';
import {
  buildEastWestGateway,
  buildEndpointSlice,
  buildGloo,
  buildNode,
  buildPod,
  buildService,
  buildVirtualDestination,
} from '@meshrelay/testkit';
import type { ClusterInfo } from '../src/index.ts';

export const CLUSTERS = ['c0', 'c1', 'c2', 'c3'] as const;
const NAMESPACES = ['shop', 'pay'] as const;
const PORT = 9080;

interface ServiceState {
  ips: string[];
  /** Pod label `version` per ip. */
  versions: Record<string, string>;
  account: string;
}

interface ClusterState {
  present: boolean;
  gateway: string;
  services: Map<string, ServiceState>;
}

interface GlooState {
  cluster: string;
  spec: Record<string, unknown>;
  labels?: Record<string, string>;
}

/** Seeded PRNG (mulberry32): the same seed gives the same change sequence. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const svcKey = (ns: string, name: string): string => `${ns}/${name}`;

export class ChangeWorld {
  readonly clusters = new Map<string, ClusterState>();
  readonly registry = new Map<string, ClusterInfo>();
  readonly vips = new Map<string, string>();
  readonly gloo = new Map<
    string,
    {
      kind:
        | 'VirtualDestination'
        | 'RouteTable'
        | 'AccessPolicy'
        | 'FailoverPolicy'
        | 'OutlierDetectionPolicy'
        | 'WorkspaceSettings';
    } & GlooState
  >();
  /** The management plane's Workspaces (none at first: then everything is one global workspace). */
  workspaces: Resource[] = [];
  readonly #random: () => number;
  #counter = 0;

  constructor(random: () => number) {
    this.#random = random;
    for (const [c, name] of CLUSTERS.entries()) {
      const services = new Map<string, ServiceState>();
      for (let s = 0; s < 3; s++)
        for (const ns of NAMESPACES)
          services.set(svcKey(ns, `svc-${s}`), { ips: [this.#ip(c), this.#ip(c)], versions: {}, account: `svc-${s}` });
      this.clusters.set(name, { present: true, gateway: `203.0.113.${10 + c}`, services });
      this.registry.set(name, { name });
    }
    for (let s = 0; s < 3; s++) this.#addDestination(`svc-${s}`, 'shop');
    this.gloo.set('RouteTable/shop/svc-0-routes', {
      kind: 'RouteTable',
      cluster: 'c0',
      spec: routeSpec('svc-0-global', '/api'),
    });
    this.gloo.set('AccessPolicy/shop/svc-0-access', {
      kind: 'AccessPolicy',
      cluster: 'c0',
      spec: accessSpec('svc-0-global', 'svc-1', 'shop'),
    });
    this.gloo.set('FailoverPolicy/shop/failover', { kind: 'FailoverPolicy', cluster: 'c0', spec: failoverSpec() });
  }

  #pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.#random() * list.length)] as T;
  }

  #ip(c: number): string {
    this.#counter += 1;
    return `10.${c}.${(this.#counter >> 8) & 255}.${this.#counter & 255}`;
  }

  #addDestination(service: string, ns: string): void {
    const name = `${service}-global`;
    this.gloo.set(`VirtualDestination/${ns}/${name}`, {
      kind: 'VirtualDestination',
      cluster: this.#pick(CLUSTERS),
      labels: { failover: 'on' },
      spec: {
        hosts: [`${name}.mesh`],
        services: [{ labels: { app: service }, namespace: ns }],
        ports: [{ number: PORT, protocol: 'HTTP' }],
      },
    });
    this.vips.set(`${ns}/${name}`, `10.200.0.${this.vips.size + 1}`);
  }

  /** Applies one random change; returns what it did and the clusters whose input changed. */
  change(): { what: string; touched: string[] } {
    const changes = [
      () => this.#endpoint('add'),
      () => this.#endpoint('remove'),
      () => this.#endpoint('edit'),
      () => this.#service(),
      () => this.#pod(),
      () => this.#destination(),
      () => this.#routeTable(),
      () => this.#accessPolicy(),
      () => this.#presence(),
      () => this.#vip(),
      () => this.#registryInfo(),
      () => this.#gateway(),
      () => this.#policy(),
      () => this.#workspaces(),
      () => this.#workspaceSettings(),
    ];
    return this.#pick(changes)();
  }

  #someService(): [string, ClusterState, string, ServiceState] | undefined {
    const cluster = this.#pick(CLUSTERS);
    const state = this.clusters.get(cluster) as ClusterState;
    const keys = [...state.services.keys()];
    if (keys.length === 0) return undefined;
    const key = this.#pick(keys);
    return [cluster, state, key, state.services.get(key) as ServiceState];
  }

  #endpoint(how: 'add' | 'remove' | 'edit'): { what: string; touched: string[] } {
    const found = this.#someService();
    if (!found) return { what: 'nothing', touched: [] };
    const [cluster, , key, svc] = found;
    const c = CLUSTERS.indexOf(cluster as (typeof CLUSTERS)[number]);
    if (how === 'add') svc.ips.push(this.#ip(c));
    else if (svc.ips.length > 0 && how === 'remove') svc.ips.splice(Math.floor(this.#random() * svc.ips.length), 1);
    else if (svc.ips.length > 0) svc.ips[Math.floor(this.#random() * svc.ips.length)] = this.#ip(c);
    return { what: `${how} an endpoint of ${key} in ${cluster}`, touched: [cluster] };
  }

  #service(): { what: string; touched: string[] } {
    const cluster = this.#pick(CLUSTERS);
    const state = this.clusters.get(cluster) as ClusterState;
    const key = svcKey(this.#pick(NAMESPACES), `svc-${Math.floor(this.#random() * 4)}`);
    if (state.services.has(key)) state.services.delete(key);
    else
      state.services.set(key, {
        ips: [this.#ip(CLUSTERS.indexOf(cluster as (typeof CLUSTERS)[number]))],
        versions: {},
        account: key.split('/')[1] as string,
      });
    return { what: `toggle Service ${key} in ${cluster}`, touched: [cluster] };
  }

  #pod(): { what: string; touched: string[] } {
    const found = this.#someService();
    if (!found || found[3].ips.length === 0) return { what: 'nothing', touched: [] };
    const [cluster, , key, svc] = found;
    const ip = this.#pick(svc.ips);
    if (this.#random() < 0.5) svc.versions[ip] = svc.versions[ip] === 'v2' ? 'v1' : 'v2';
    else svc.account = svc.account === 'shared' ? (key.split('/')[1] as string) : 'shared';
    return { what: `edit a Pod of ${key} in ${cluster}`, touched: [cluster] };
  }

  #toggleGloo(
    id: string,
    make: () => GlooState & {
      kind:
        | 'VirtualDestination'
        | 'RouteTable'
        | 'AccessPolicy'
        | 'FailoverPolicy'
        | 'OutlierDetectionPolicy'
        | 'WorkspaceSettings';
    },
  ): { what: string; touched: string[] } {
    const old = this.gloo.get(id);
    if (old && this.#random() < 0.4) {
      this.gloo.delete(id);
      return { what: `remove ${id}`, touched: [old.cluster] };
    }
    const next = make();
    this.gloo.set(id, next);
    return {
      what: `${old ? 'edit' : 'add'} ${id}`,
      touched: [...new Set([next.cluster, ...(old ? [old.cluster] : [])])],
    };
  }

  #destination(): { what: string; touched: string[] } {
    const s = Math.floor(this.#random() * 4);
    const ns = this.#pick(NAMESPACES);
    const name = `svc-${s}-global`;
    const port = this.#random() < 0.15 ? 9999 : PORT;
    // Without a namespace the selector matches the Service in both namespaces: a conflict to report.
    const selector =
      this.#random() < 0.1 ? { labels: { app: `svc-${s}` } } : { labels: { app: `svc-${s}` }, namespace: ns };
    // Now and then an invalid one (no hosts): admission must report it.
    const hosts = this.#random() < 0.1 ? [] : [`${name}.mesh`];
    const result = this.#toggleGloo(`VirtualDestination/${ns}/${name}`, () => ({
      kind: 'VirtualDestination',
      cluster: this.#pick(CLUSTERS),
      labels: this.#random() < 0.5 ? { failover: 'on' } : ({} as Record<string, string>),
      spec: { hosts, services: [selector], ports: [{ number: port, protocol: 'HTTP' }] },
    }));
    if (!this.vips.has(`${ns}/${name}`))
      this.vips.set(`${ns}/${name}`, `10.200.1.${s * 2 + NAMESPACES.indexOf(ns as (typeof NAMESPACES)[number])}`);
    return result;
  }

  #routeTable(): { what: string; touched: string[] } {
    const s = Math.floor(this.#random() * 4);
    const ns = this.#pick(NAMESPACES);
    const spec = routeSpec(`svc-${Math.floor(this.#random() * 4)}-global`, this.#pick(['/api', '/v2', '/']));
    // Now and then bound to the workloads running version v2 (which depends on the consumer's pods).
    if (this.#random() < 0.3) spec['workloadSelectors'] = [{ selector: { labels: { version: 'v2' } } }];
    return this.#toggleGloo(`RouteTable/${ns}/svc-${s}-routes`, () => ({
      kind: 'RouteTable',
      cluster: this.#pick(CLUSTERS),
      spec,
    }));
  }

  #accessPolicy(): { what: string; touched: string[] } {
    const s = Math.floor(this.#random() * 4);
    const ns = this.#pick(NAMESPACES);
    const roll = this.#random();
    // An invalid AccessPolicy (unknown field) fails closed: last good outputs, or deny-by-default.
    const spec =
      roll < 0.15
        ? { ...accessSpec(`svc-${s}-global`, 'svc-1', ns), bogus: true }
        : roll < 0.3
          ? accessSpec(`svc-${s}-global`, 'shared', undefined)
          : accessSpec(`svc-${s}-global`, `svc-${Math.floor(this.#random() * 3)}`, this.#pick(NAMESPACES));
    return this.#toggleGloo(`AccessPolicy/${ns}/svc-${s}-access`, () => ({
      kind: 'AccessPolicy',
      cluster: this.#pick(CLUSTERS),
      spec,
    }));
  }

  #policy(): { what: string; touched: string[] } {
    if (this.#random() < 0.5)
      return this.#toggleGloo('FailoverPolicy/shop/failover', () => ({
        kind: 'FailoverPolicy',
        cluster: this.#pick(CLUSTERS),
        spec: failoverSpec(),
      }));
    return this.#toggleGloo('OutlierDetectionPolicy/shop/outlier', () => ({
      kind: 'OutlierDetectionPolicy',
      cluster: this.#pick(CLUSTERS),
      spec: {
        applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { labels: { failover: 'on' } } }],
        config: { consecutiveErrors: 1 + Math.floor(this.#random() * 5) },
      },
    }));
  }

  #presence(): { what: string; touched: string[] } {
    const cluster = this.#pick(CLUSTERS);
    const state = this.clusters.get(cluster) as ClusterState;
    const present = [...this.clusters.values()].filter((c) => c.present).length;
    if (state.present && present === 1) return { what: 'nothing', touched: [] };
    state.present = !state.present;
    return { what: `${state.present ? 'appear' : 'disappear'} ${cluster}`, touched: [cluster] };
  }

  #vip(): { what: string; touched: string[] } {
    const keys = [...this.vips.keys()];
    const key = this.#pick(keys);
    if (this.#random() < 0.2) this.vips.delete(key);
    else this.vips.set(key, `10.201.${Math.floor(this.#random() * 256)}.${Math.floor(this.#random() * 256)}`);
    return { what: `VIP of ${key}`, touched: [] };
  }

  #registryInfo(): { what: string; touched: string[] } {
    const cluster = this.#pick(CLUSTERS);
    const info = this.registry.get(cluster) as ClusterInfo;
    const roll = this.#random();
    const next: ClusterInfo =
      roll < 0.25
        ? { ...info, network: info.network === 'net-x' ? `net-${cluster}` : 'net-x' }
        : roll < 0.5
          ? { ...info, trustDomain: info.trustDomain === 'td.example' ? 'cluster.local' : 'td.example' }
          : roll < 0.75
            ? { ...info, clusterDomain: info.clusterDomain === 'corp.local' ? 'cluster.local' : 'corp.local' }
            : { ...info, labels: { tier: info.labels?.['tier'] === 'a' ? 'b' : 'a' } };
    this.registry.set(cluster, next);
    return { what: `registry info of ${cluster}`, touched: [] };
  }

  /** Which namespaces and clusters the Workspaces own: changes what every output's scoping reads. */
  #workspaces(): { what: string; touched: string[] } {
    const roll = this.#random();
    const shopClusters =
      roll < 0.5
        ? [{ name: '*', namespaces: [{ name: 'shop' }] }]
        : [
            { selector: { tier: 'a' }, namespaces: [{ name: 'shop' }] },
            { name: 'c0', namespaces: [{ name: 'shop' }] },
          ];
    this.workspaces =
      roll < 0.2
        ? []
        : [
            workspaceResource('shop-team', shopClusters),
            workspaceResource('pay-team', [{ name: '*', namespaces: [{ name: 'pay' }] }]),
          ];
    return { what: `workspaces (${this.workspaces.length})`, touched: [] };
  }

  /** shop's WorkspaceSettings: exports VirtualDestinations to pay-team by label, or everything, or nothing. */
  #workspaceSettings(): { what: string; touched: string[] } {
    const roll = this.#random();
    const exportTo =
      roll < 0.4
        ? [
            {
              workspaces: [{ name: 'pay-team' }],
              resources: [{ kind: 'VIRTUAL_DESTINATION', labels: { failover: 'on' } }],
            },
          ]
        : roll < 0.7
          ? [{ workspaces: [{ name: 'pay-team' }] }]
          : [];
    const result = this.#toggleGloo('WorkspaceSettings/shop/shop-team', () => ({
      kind: 'WorkspaceSettings',
      cluster: 'c0',
      spec: { exportTo },
    }));
    if (!this.gloo.has('WorkspaceSettings/pay/pay-team'))
      this.gloo.set('WorkspaceSettings/pay/pay-team', {
        kind: 'WorkspaceSettings',
        cluster: 'c0',
        spec: { importFrom: [{ workspaces: [{ name: 'shop-team' }] }] },
      });
    return { ...result, touched: ['c0'] };
  }

  #gateway(): { what: string; touched: string[] } {
    const cluster = this.#pick(CLUSTERS);
    const state = this.clusters.get(cluster) as ClusterState;
    state.gateway = state.gateway.endsWith('.99')
      ? `203.0.113.${10 + CLUSTERS.indexOf(cluster as (typeof CLUSTERS)[number])}`
      : '203.0.113.99';
    return { what: `gateway of ${cluster}`, touched: [cluster] };
  }

  /** The resources of one cluster's input. */
  resourcesOf(cluster: string): Resource[] {
    const state = this.clusters.get(cluster) as ClusterState;
    const node = `node-${cluster}`;
    const out: Resource[] = [
      buildNode({ name: node, region: `region-${cluster}`, zone: `zone-${cluster}` }),
      buildEastWestGateway({ address: state.gateway }),
    ];
    for (const [key, svc] of state.services) {
      const [ns, name] = key.split('/') as [string, string];
      out.push(
        buildService({
          name,
          namespace: ns,
          ports: [{ name: 'http', port: PORT, targetPort: PORT }],
          selector: { app: name },
          labels: { app: name },
        }),
      );
      const pods = svc.ips.map((ip) => ({ ip, pod: `${name}-${ip.replaceAll('.', '-')}`, node }));
      out.push(
        buildEndpointSlice({ service: name, namespace: ns, ports: [{ name: 'http', port: PORT }], endpoints: pods }),
      );
      for (const p of pods)
        out.push(
          buildPod({
            name: p.pod,
            namespace: ns,
            ip: p.ip,
            node,
            serviceAccount: svc.account,
            labels: { app: name, version: svc.versions[p.ip] ?? 'v1' },
          }),
        );
    }
    for (const [id, g] of this.gloo) {
      if (g.cluster !== cluster) continue;
      const [, ns, name] = id.split('/') as [string, string, string];
      if (g.kind === 'VirtualDestination') {
        const spec = g.spec as {
          hosts: string[];
          services: Record<string, unknown>[];
          ports: Record<string, unknown>[];
        };
        out.push(
          buildVirtualDestination({
            name,
            namespace: ns,
            hosts: spec.hosts,
            services: spec.services,
            ports: spec.ports,
            ...(g.labels ? { labels: g.labels } : {}),
          }),
        );
      } else {
        out.push(buildGloo(g.kind, { name, namespace: ns, spec: g.spec }));
      }
    }
    return out;
  }
}

/** A management-plane Workspace owning `clusters` (workloadClusters entries). */
export function workspaceResource(name: string, clusters: Record<string, unknown>[]): Resource {
  return {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'Workspace',
    metadata: { name, namespace: 'gloo-mesh' },
    spec: { workloadClusters: clusters },
  };
}

function routeSpec(vd: string, prefix: string): Record<string, unknown> {
  return {
    hosts: [`${vd}.mesh`],
    http: [
      {
        name: 'api',
        labels: { route: 'global' },
        matchers: [{ uri: { prefix } }],
        forwardTo: { destinations: [{ ref: { name: vd }, kind: 'VIRTUAL_DESTINATION', port: { number: PORT } }] },
      },
    ],
  };
}

function accessSpec(vd: string, client: string, clientNamespace: string | undefined): Record<string, unknown> {
  return {
    applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { name: vd } }],
    config: {
      authz: {
        allowedClients: [
          { serviceAccountSelector: { name: client, ...(clientNamespace ? { namespace: clientNamespace } : {}) } },
        ],
        allowedMethods: ['GET'],
      },
    },
  };
}

function failoverSpec(): Record<string, unknown> {
  return {
    applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { labels: { failover: 'on' } } }],
    config: { localityMappings: [{ from: { region: 'region-c0' }, to: [{ region: 'region-c1' }] }] },
  };
}
