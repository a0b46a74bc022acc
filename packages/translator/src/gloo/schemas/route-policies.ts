/**
 * Schemas of the route policies that become VirtualService route fields, following solo-apis
 * gloo-mesh-v2.6.x: FaultInjectionPolicy (resilience), HeaderManipulationPolicy and
 * MirrorPolicy (trafficcontrol), CORSPolicy (security).
 */
import {
  BOOLEAN,
  DESTINATION_REFERENCE,
  DESTINATION_SELECTOR,
  DURATION,
  ROUTE_SELECTOR,
  STRING,
  STRING_LIST,
  STRING_MAP,
  STRING_MATCH,
  closedObject,
  listOf,
  unimplemented,
  type JsonSchema,
} from './gloo-common.ts';

/** A google.protobuf.DoubleValue percentage. */
const PERCENTAGE: JsonSchema = { type: 'number', minimum: 0, maximum: 100 };

function routePolicy(config: JsonSchema, extra: Record<string, JsonSchema> = {}): JsonSchema {
  return closedObject({ applyToRoutes: listOf(ROUTE_SELECTOR), config, ...extra }, { required: ['config'] });
}

export const FAULT_INJECTION_POLICY_SPEC = routePolicy(
  closedObject(
    {
      delay: closedObject({ fixedDelay: DURATION, percentage: PERCENTAGE }, { required: ['fixedDelay'] }),
      abort: closedObject(
        { httpStatus: { type: 'integer', minimum: 200, maximum: 599 }, percentage: PERCENTAGE },
        { required: ['httpStatus'] },
      ),
    },
    { anyOf: [{ required: ['delay'] }, { required: ['abort'] }] },
  ),
);

/** common.gloo.solo.io.RouteDestinationSelector */
const ROUTE_DESTINATION_SELECTOR = closedObject({
  route: closedObject({ labels: STRING_MAP, namespace: STRING, cluster: STRING, workspace: STRING }),
  onDestinations: listOf(DESTINATION_SELECTOR),
});

export const HEADER_MANIPULATION_POLICY_SPEC = routePolicy(
  closedObject({
    removeResponseHeaders: STRING_LIST,
    appendResponseHeaders: STRING_MAP,
    removeRequestHeaders: STRING_LIST,
    appendRequestHeaders: STRING_MAP,
  }),
  { applyToRouteDestinations: unimplemented(listOf(ROUTE_DESTINATION_SELECTOR)) },
);

export const CORS_POLICY_SPEC = routePolicy(
  closedObject({
    allowOrigins: listOf(STRING_MATCH),
    allowMethods: STRING_LIST,
    allowHeaders: STRING_LIST,
    exposeHeaders: STRING_LIST,
    maxAge: DURATION,
    allowCredentials: BOOLEAN,
  }),
);

export const MIRROR_POLICY_SPEC = routePolicy(
  closedObject({ destination: DESTINATION_REFERENCE, percentage: PERCENTAGE }, { required: ['destination'] }),
);
