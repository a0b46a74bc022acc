/**
 * Schemas of networking.gloo.solo.io/v2 VirtualDestination and RouteTable specs, following
 * solo-apis gloo-mesh-v2.6.x (virtual_destination.proto, route_table.proto).
 */
import {
  BOOLEAN,
  DESTINATION_REFERENCE,
  DESTINATION_SELECTOR,
  HTTP_REQUEST_MATCHER,
  INT32,
  OBJECT_REFERENCE,
  OBJECT_SELECTOR,
  PORT_NUMBER,
  PORT_SELECTOR,
  STRING,
  STRING_MAP,
  WORKLOAD_SELECTOR,
  closedObject,
  listOf,
  unimplemented,
  type JsonSchema,
} from './gloo-common.ts';

/** A host name as Istio accepts it in ServiceEntry/VirtualService hosts (a leading `*.` wildcard allowed). */
export const HOST: JsonSchema = {
  type: 'string',
  pattern: '^(\\*\\.)?[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*$',
  maxLength: 255,
};

/** networking.gloo.solo.io.VirtualDestinationSpec.PortMapping */
const PORT_MAPPING = closedObject(
  {
    number: PORT_NUMBER,
    protocol: { enum: ['HTTP', 'HTTPS', 'GRPC', 'HTTP2', 'MONGO', 'TCP', 'TLS'] },
    targetPort: PORT_SELECTOR,
  },
  { required: ['number', 'protocol'] },
);

/** common.gloo.solo.io.ClientMode: a oneof of empty messages. */
const CLIENT_MODE = closedObject({
  auto: { type: 'object' },
  sniRouting: { type: 'object' },
  tlsTermination: { type: 'object' },
});

export const VIRTUAL_DESTINATION_SPEC = closedObject(
  {
    hosts: listOf(HOST, { minItems: 1 }),
    services: listOf(OBJECT_SELECTOR),
    externalServices: unimplemented(listOf(OBJECT_SELECTOR)),
    externalWorkloads: unimplemented(listOf(OBJECT_SELECTOR)),
    ports: listOf(PORT_MAPPING, { minItems: 1 }),
    clientMode: unimplemented(CLIENT_MODE),
  },
  { required: ['hosts', 'ports'] },
);

/** envoy.type.matcher.v3.RegexMatchAndSubstitute */
const REGEX_MATCH_AND_SUBSTITUTE = closedObject(
  {
    pattern: closedObject(
      { regex: { type: 'string', minLength: 1 }, googleRe2: { type: 'object' } },
      { required: ['regex'] },
    ),
    substitution: STRING,
  },
  { required: ['pattern'] },
);

/** networking.gloo.solo.io.ForwardToAction */
const FORWARD_TO_ACTION = closedObject(
  {
    destinations: listOf(DESTINATION_REFERENCE, { maxItems: 99 }),
    pathRewrite: STRING,
    regexRewrite: REGEX_MATCH_AND_SUBSTITUTE,
    hostRewrite: STRING,
    autoHostRewrite: unimplemented(BOOLEAN),
  },
  {
    allOf: [
      { not: { required: ['pathRewrite', 'regexRewrite'] } },
      { not: { required: ['hostRewrite', 'autoHostRewrite'] } },
    ],
  },
);

/** networking.gloo.solo.io.RedirectAction */
const REDIRECT_ACTION = closedObject({
  hostRedirect: STRING,
  pathRedirect: STRING,
  responseCode: { enum: ['MOVED_PERMANENTLY', 'FOUND', 'SEE_OTHER', 'TEMPORARY_REDIRECT', 'PERMANENT_REDIRECT'] },
});

/** networking.gloo.solo.io.DirectResponseAction */
const DIRECT_RESPONSE_ACTION = closedObject(
  { status: { type: 'integer', minimum: 200, maximum: 599 }, body: STRING },
  { required: ['status'] },
);

/** networking.gloo.solo.io.DelegateAction */
const DELEGATE_ACTION = closedObject({
  routeTables: listOf(OBJECT_SELECTOR),
  allowedRoutes: unimplemented(listOf({ type: 'object' })),
  sortMethod: { enum: ['TABLE_WEIGHT', 'ROUTE_SPECIFICITY'] },
});

const ROUTE_ACTIONS = ['forwardTo', 'delegate', 'redirect', 'directResponse', 'graphql'] as const;

/** networking.gloo.solo.io.HTTPRoute: exactly one action. */
const HTTP_ROUTE = closedObject(
  {
    name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' },
    labels: STRING_MAP,
    matchers: listOf(HTTP_REQUEST_MATCHER),
    forwardTo: FORWARD_TO_ACTION,
    delegate: DELEGATE_ACTION,
    redirect: REDIRECT_ACTION,
    directResponse: DIRECT_RESPONSE_ACTION,
    graphql: unimplemented({ type: 'object' }),
  },
  { oneOf: ROUTE_ACTIONS.map((a) => ({ required: [a] })) },
);

export const ROUTE_TABLE_SPEC = closedObject(
  {
    hosts: listOf(HOST),
    virtualGateways: listOf(OBJECT_REFERENCE),
    workloadSelectors: listOf(WORKLOAD_SELECTOR),
    applyToDestinations: unimplemented(listOf(DESTINATION_SELECTOR)),
    defaultDestination: DESTINATION_REFERENCE,
    http: listOf(HTTP_ROUTE, { maxItems: 10000 }),
    tcp: unimplemented(listOf({ type: 'object' })),
    tls: unimplemented(listOf({ type: 'object' })),
    weight: INT32,
    portalMetadata: unimplemented({ type: 'object' }),
    failureMode: { enum: ['ROUTE_REPLACEMENT', 'FREEZE_CONFIG'] },
    virtualServiceAnnotations: STRING_MAP,
  },
  {},
);
