/**
 * WorkspaceSettings options.federation: every Service of the workspace (or those its
 * serviceSelector picks) becomes reachable from every cluster of the workspace and its
 * importers as `<name>.<namespace>.svc.<hostSuffix>`, built as an implicit VirtualDestination
 * (`<name>-federated`) owned by the WorkspaceSettings.
 */
import type { ClusterIndex, ServicePort } from '../gloo/cluster-index.ts';
import type { VirtualDestinationSpec } from '../gloo/gloo-types.ts';
import type { Owned } from '../gloo/inventory.ts';
import { matchesObjectSelector } from '../gloo/selectors.ts';
import type { WorkspaceSettingsSpec } from './workspaces.ts';

/** Gloo's default federation host suffix. */
export const DEFAULT_HOST_SUFFIX = 'mesh.internal';

const PROTOCOLS = ['http2', 'https', 'http', 'grpc', 'mongo', 'tls', 'tcp'] as const;

/** Istio's protocol selection by port name prefix (`http-web` is HTTP); TCP when unnamed. */
export function protocolOf(port: ServicePort): string {
  const prefix = port.name.split('-')[0] ?? '';
  const known = PROTOCOLS.find((p) => p === prefix);
  return (known ?? 'tcp').toUpperCase();
}

type FederationOptions = NonNullable<NonNullable<WorkspaceSettingsSpec['options']>['federation']>;

function selectedPorts(ports: readonly ServicePort[], options: FederationOptions): ServicePort[] {
  const wanted = options.ports ?? [];
  if (wanted.length === 0) return [...ports];
  return ports.filter((p) =>
    wanted.some((w) => (w.number !== undefined && w.number === p.port) || (w.name !== undefined && w.name === p.name)),
  );
}

/** The implicit VirtualDestinations of one WorkspaceSettings' federation (none when not enabled). */
export function federatedDestinations(
  settings: Owned<WorkspaceSettingsSpec>,
  workspace: string,
  indexes: readonly ClusterIndex[],
): Owned<VirtualDestinationSpec>[] {
  const options = settings.spec.options?.federation;
  if (!options?.enabled) return [];
  const suffix = options.hostSuffix || DEFAULT_HOST_SUFFIX;
  const selectors = options.serviceSelector ?? [];
  const byKey = new Map<string, Owned<VirtualDestinationSpec>>();
  for (const index of indexes) {
    for (const svc of index.services) {
      if (svc.workspace !== workspace) continue;
      if (selectors.length > 0 && !selectors.some((s) => matchesObjectSelector(s, svc))) continue;
      const key = `${svc.namespace}/${svc.name}`;
      const ports = selectedPorts(svc.ports, options).filter((p) => p.port > 0);
      if (byKey.has(key) || ports.length === 0) continue;
      byKey.set(key, {
        source: settings.source,
        workspace,
        cluster: settings.cluster,
        namespace: svc.namespace,
        name: `${svc.name}-federated`,
        labels: {},
        resource: settings.resource,
        spec: {
          hosts: [`${svc.name}.${svc.namespace}.svc.${suffix}`],
          services: [{ name: svc.name, namespace: svc.namespace }],
          ports: ports.map((p) => ({ number: p.port, protocol: protocolOf(p) })),
        },
      });
    }
  }
  return [...byKey.keys()].sort().map((k) => byKey.get(k) as Owned<VirtualDestinationSpec>);
}
