/** Schemas of admin.gloo.solo.io/v2 Workspace and WorkspaceSettings specs (solo-apis gloo-mesh-v2.6.x). */
import {
  BOOLEAN,
  OBJECT_SELECTOR,
  PORT_SELECTOR,
  STRING,
  STRING_MAP,
  UINT32,
  closedObject,
  listOf,
  unimplemented,
  type JsonSchema,
} from './gloo-common.ts';

/** common.gloo.solo.io.ClusterSelector: a cluster by name (glob) or labels, and its namespaces. */
const CLUSTER_SELECTOR = closedObject({
  name: STRING,
  selector: STRING_MAP,
  namespaces: listOf(
    closedObject({ name: STRING, configEnabled: unimplemented(BOOLEAN), labels: unimplemented(STRING_MAP) }),
  ),
  configEnabled: unimplemented(BOOLEAN),
});

export const WORKSPACE_SPEC = closedObject({ workloadClusters: listOf(CLUSTER_SELECTOR) });

export const RESOURCE_KINDS = [
  'ALL',
  'ROUTE_TABLE',
  'SERVICE',
  'VIRTUAL_DESTINATION',
  'EXTERNAL_SERVICE',
  'API_DOC',
  'GRAPHQL_RESOLVER_MAP',
  'GRAPHQL_SCHEMA',
  'GRAPHQL_STITCHED_SCHEMA',
  'EXTERNAL_WORKLOAD',
] as const;

const WORKSPACE_OBJECT_SELECTOR: JsonSchema = closedObject({
  workspaces: listOf(closedObject({ name: STRING, selector: STRING_MAP })),
  resources: listOf(
    closedObject({
      kind: { enum: [...RESOURCE_KINDS] },
      labels: STRING_MAP,
      name: STRING,
      namespace: STRING,
      cluster: STRING,
    }),
  ),
});

const CLIENT_MODE = closedObject({
  auto: { type: 'object' },
  sniRouting: { type: 'object' },
  tlsTermination: { type: 'object' },
});

export const WORKSPACE_SETTINGS_SPEC = closedObject({
  importFrom: listOf(WORKSPACE_OBJECT_SELECTOR),
  exportTo: listOf(WORKSPACE_OBJECT_SELECTOR),
  options: closedObject({
    serviceIsolation: closedObject({
      enabled: BOOLEAN,
      trimProxyConfig: unimplemented(BOOLEAN),
      enforcementLayers: unimplemented(closedObject({ cni: BOOLEAN, mesh: BOOLEAN }), 'INVALID'),
    }),
    federation: closedObject({
      enabled: BOOLEAN,
      hostSuffix: STRING,
      serviceSelector: listOf(OBJECT_SELECTOR),
      ports: listOf(PORT_SELECTOR),
    }),
    eastWestGateways: listOf(
      closedObject({
        selector: OBJECT_SELECTOR,
        port: PORT_SELECTOR,
        tlsTerminationPort: unimplemented(PORT_SELECTOR),
        hostInfoOverrides: listOf(closedObject({ addr: STRING, port: UINT32 })),
      }),
    ),
    virtualDestClientMode: unimplemented(CLIENT_MODE),
    trimAllProxyConfig: unimplemented(BOOLEAN),
  }),
});
