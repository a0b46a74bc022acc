/**
 * JSON schemas of the Gloo Mesh v2 messages shared by several kinds
 * (common.gloo.solo.io: selectors.proto, references.proto, port.proto, http_matchers.proto).
 * Field names are the lowerCamelCase JSON names of the proto fields. Every object rejects
 * fields it does not list: Meshrelay supports a subset, and a field it would silently drop
 * is a policy the operator believes is in force.
 */

export type JsonSchema = Record<string, unknown>;

export const STRING: JsonSchema = { type: 'string' };
export const BOOLEAN: JsonSchema = { type: 'boolean' };
export const STRING_LIST: JsonSchema = { type: 'array', items: STRING };
export const STRING_MAP: JsonSchema = { type: 'object', additionalProperties: STRING };
export const PORT_NUMBER: JsonSchema = { type: 'integer', minimum: 1, maximum: 65535 };
export const INT32: JsonSchema = { type: 'integer', minimum: -2147483648, maximum: 2147483647 };
export const UINT32: JsonSchema = { type: 'integer', minimum: 0, maximum: 4294967295 };

/** A Go/protobuf duration as Gloo and Istio write it: `10s`, `1.5h`, `1s500ms` (at least 1ms, no finer unit). */
export const DURATION: JsonSchema = { type: 'string', pattern: '^([0-9]+(\\.[0-9]+)?(h|ms|m|s))+$' };

export function closedObject(properties: Record<string, JsonSchema>, extra: JsonSchema = {}): JsonSchema {
  return { type: 'object', properties, additionalProperties: false, ...extra };
}

export function listOf(items: JsonSchema, extra: JsonSchema = {}): JsonSchema {
  return { type: 'array', items, ...extra };
}

/** common.gloo.solo.io.ObjectSelector */
export const OBJECT_SELECTOR = closedObject({
  labels: STRING_MAP,
  name: STRING,
  namespace: STRING,
  cluster: STRING,
  workspace: STRING,
});

/** common.gloo.solo.io.PortSelector: a oneof of number or name. */
export const PORT_SELECTOR = closedObject({ number: PORT_NUMBER, name: { type: 'string', minLength: 1 } }, { not: { required: ['number', 'name'] } });

export const DESTINATION_KIND: JsonSchema = { enum: ['SERVICE', 'VIRTUAL_DESTINATION', 'EXTERNAL_SERVICE'] };

/** common.gloo.solo.io.DestinationSelector */
export const DESTINATION_SELECTOR = closedObject({
  selector: OBJECT_SELECTOR,
  kind: DESTINATION_KIND,
  port: PORT_SELECTOR,
});

/**
 * DestinationSelector as AccessPolicy accepts it: without port-level selection and external
 * services, which Meshrelay cannot express as an AuthorizationPolicy. Rejecting them is
 * safer than widening or dropping an access rule.
 */
export const ACCESS_DESTINATION_SELECTOR = closedObject({
  selector: OBJECT_SELECTOR,
  kind: { enum: ['SERVICE', 'VIRTUAL_DESTINATION'] },
});

/** common.gloo.solo.io.ObjectReference */
export const OBJECT_REFERENCE = closedObject({ name: { type: 'string', minLength: 1 }, namespace: STRING, cluster: STRING }, { required: ['name'] });

/** common.gloo.solo.io.DestinationReference (without subsets and function destinations). */
export const DESTINATION_REFERENCE = closedObject(
  {
    ref: OBJECT_REFERENCE,
    kind: DESTINATION_KIND,
    port: PORT_SELECTOR,
    weight: UINT32,
  },
  { required: ['ref'] },
);

/** common.gloo.solo.io.RouteLabelSelector */
export const ROUTE_LABEL_SELECTOR = closedObject({ labels: STRING_MAP, namespace: STRING, cluster: STRING, workspace: STRING });

/** common.gloo.solo.io.RouteSelector: a oneof of route or withDestinations. */
export const ROUTE_SELECTOR = closedObject({ route: ROUTE_LABEL_SELECTOR, withDestinations: DESTINATION_SELECTOR }, { not: { required: ['route', 'withDestinations'] } });

/** common.gloo.solo.io.IdentitySelector (service accounts and request identities). */
export const IDENTITY_SELECTOR = closedObject({
  serviceAccountSelector: OBJECT_SELECTOR,
  requestIdentityMatcher: closedObject({ requestPrincipals: STRING_LIST, notRequestPrincipals: STRING_LIST }),
});

/** common.gloo.solo.io.StringMatch: a oneof of exact, prefix, regex, suffix. */
export const STRING_MATCH = closedObject(
  { exact: STRING, prefix: STRING, regex: STRING, suffix: STRING, ignoreCase: BOOLEAN },
  { oneOf: [{ required: ['exact'] }, { required: ['prefix'] }, { required: ['regex'] }, { required: ['suffix'] }] },
);

/** common.gloo.solo.io.HTTPRequestMatcher */
export const HTTP_REQUEST_MATCHER = closedObject({
  name: STRING,
  uri: STRING_MATCH,
  headers: listOf(closedObject({ name: { type: 'string', minLength: 1 }, value: STRING, regex: BOOLEAN, invertMatch: BOOLEAN }, { required: ['name'] })),
  queryParameters: listOf(closedObject({ name: { type: 'string', minLength: 1 }, value: STRING, regex: BOOLEAN }, { required: ['name'] })),
  method: { type: 'string', pattern: '^[A-Z]+$' },
  port: PORT_NUMBER,
});
