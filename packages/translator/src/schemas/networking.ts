/** Schemas of networking.gloo.solo.io/v2 VirtualDestination and RouteTable specs (the supported subset). */
import {
  DESTINATION_REFERENCE,
  HTTP_REQUEST_MATCHER,
  INT32,
  OBJECT_SELECTOR,
  PORT_NUMBER,
  PORT_SELECTOR,
  STRING,
  STRING_MAP,
  closedObject,
  listOf,
  type JsonSchema,
} from './gloo-common.ts';

/** A host name as Istio accepts it in ServiceEntry/VirtualService hosts (a leading `*.` wildcard allowed). */
const HOST: JsonSchema = { type: 'string', pattern: '^(\\*\\.)?[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*$', maxLength: 255 };

/** networking.gloo.solo.io.VirtualDestinationSpec.PortMapping */
const PORT_MAPPING = closedObject(
  {
    number: PORT_NUMBER,
    protocol: { enum: ['HTTP', 'HTTPS', 'GRPC', 'HTTP2', 'MONGO', 'TCP', 'TLS'] },
    targetPort: PORT_SELECTOR,
  },
  { required: ['number', 'protocol'] },
);

export const VIRTUAL_DESTINATION_SPEC = closedObject(
  {
    hosts: listOf(HOST, { minItems: 1 }),
    services: listOf(OBJECT_SELECTOR, { minItems: 1 }),
    ports: listOf(PORT_MAPPING, { minItems: 1 }),
  },
  { required: ['hosts', 'services', 'ports'] },
);

/** networking.gloo.solo.io.ForwardToAction (destinations and the plain rewrites). */
const FORWARD_TO_ACTION = closedObject({
  destinations: listOf(DESTINATION_REFERENCE, { maxItems: 99 }),
  pathRewrite: STRING,
  hostRewrite: STRING,
});

/** networking.gloo.solo.io.HTTPRoute with a forwardTo action. */
const HTTP_ROUTE = closedObject(
  {
    name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' },
    labels: STRING_MAP,
    matchers: listOf(HTTP_REQUEST_MATCHER),
    forwardTo: FORWARD_TO_ACTION,
  },
  { required: ['forwardTo'] },
);

export const ROUTE_TABLE_SPEC = closedObject(
  {
    hosts: listOf(HOST, { minItems: 1 }),
    defaultDestination: DESTINATION_REFERENCE,
    http: listOf(HTTP_ROUTE, { minItems: 1, maxItems: 10000 }),
    weight: INT32,
  },
  { required: ['hosts', 'http'] },
);
