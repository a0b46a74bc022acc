/**
 * JSON schemas of the Gloo Mesh v2 messages shared by several kinds
 * (common.gloo.solo.io: selectors.proto, references.proto, port.proto, http_matchers.proto),
 * following solo-apis gloo-mesh-v2.6.x. Field names are the lowerCamelCase JSON names of the
 * proto fields. Every object lists every field of its proto message and rejects any other.
 * A field Meshrelay does not implement is accepted but marked with `unimplemented()`: when a
 * resource sets it, its status names the field (WARNING, or INVALID where ignoring it would
 * weaken security).
 */

export type JsonSchema = Record<string, unknown>;

/** Schema keyword marking an accepted field that Meshrelay does not implement (see unimplemented-fields.ts). */
export const UNIMPLEMENTED = 'x-meshrelay-unimplemented';

/** What setting an unimplemented field does to the resource's approval. */
export type UnimplementedEffect = 'WARNING' | 'INVALID';

/**
 * Marks a field as accepted but not supported. `schema` still checks its shape; leave it
 * open (`{ type: 'object' }`) for a message whose inner fields Meshrelay does not read at all.
 */
export function unimplemented(
  schema: JsonSchema = { type: 'object' },
  effect: UnimplementedEffect = 'WARNING',
): JsonSchema {
  return { ...schema, [UNIMPLEMENTED]: effect };
}

/** An unimplemented field that would weaken security if ignored: setting it makes the resource INVALID. */
export function unimplementedSecurity(schema: JsonSchema = { type: 'object' }): JsonSchema {
  return unimplemented(schema, 'INVALID');
}

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
export const PORT_SELECTOR = closedObject(
  { number: PORT_NUMBER, name: { type: 'string', minLength: 1 } },
  { not: { required: ['number', 'name'] } },
);

export const DESTINATION_KIND: JsonSchema = { enum: ['SERVICE', 'VIRTUAL_DESTINATION', 'EXTERNAL_SERVICE'] };

/** common.gloo.solo.io.DestinationSelector */
export const DESTINATION_SELECTOR = closedObject({
  selector: OBJECT_SELECTOR,
  kind: DESTINATION_KIND,
  port: PORT_SELECTOR,
});

/**
 * DestinationSelector as AccessPolicy reads it. Port-level selection cannot be expressed as an
 * AuthorizationPolicy: ignoring it would widen the policy, so setting it makes the policy
 * INVALID (as does kind EXTERNAL_SERVICE, checked when the policy is translated).
 */
export const ACCESS_DESTINATION_SELECTOR = closedObject({
  selector: OBJECT_SELECTOR,
  kind: DESTINATION_KIND,
  port: unimplementedSecurity(PORT_SELECTOR),
});

/** common.gloo.solo.io.ObjectReference */
export const OBJECT_REFERENCE = closedObject(
  { name: { type: 'string', minLength: 1 }, namespace: STRING, cluster: STRING },
  { required: ['name'] },
);

/** common.gloo.solo.io.AWSLambdaReference (function destinations are not supported). */
const AWS_LAMBDA_REFERENCE = closedObject({
  cloudProvider: OBJECT_REFERENCE,
  function: STRING,
  qualifier: STRING,
  options: { type: 'object' },
});

/** common.gloo.solo.io.DestinationReference: a oneof of ref or awsLambda. */
export const DESTINATION_REFERENCE = closedObject(
  {
    ref: OBJECT_REFERENCE,
    awsLambda: unimplemented(AWS_LAMBDA_REFERENCE),
    kind: DESTINATION_KIND,
    port: PORT_SELECTOR,
    subset: STRING_MAP,
    weight: UINT32,
  },
  { oneOf: [{ required: ['ref'] }, { required: ['awsLambda'] }] },
);

/** common.gloo.solo.io.WorkloadSelector */
export const WORKLOAD_SELECTOR = closedObject({
  selector: OBJECT_SELECTOR,
  kind: { enum: ['KUBE', 'VM'] },
  port: PORT_SELECTOR,
});

/** common.gloo.solo.io.RouteLabelSelector */
export const ROUTE_LABEL_SELECTOR = closedObject({
  labels: STRING_MAP,
  namespace: STRING,
  cluster: STRING,
  workspace: STRING,
});

/** common.gloo.solo.io.RouteSelector: a oneof of route or withDestinations. */
export const ROUTE_SELECTOR = closedObject(
  { route: ROUTE_LABEL_SELECTOR, withDestinations: DESTINATION_SELECTOR },
  { not: { required: ['route', 'withDestinations'] } },
);

/** common.gloo.solo.io.IdentitySelector (service accounts, external workloads, request identities). */
export const IDENTITY_SELECTOR = closedObject({
  serviceAccountSelector: OBJECT_SELECTOR,
  externalWorkloadSelector: unimplementedSecurity(OBJECT_SELECTOR),
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
  headers: listOf(
    closedObject(
      { name: { type: 'string', minLength: 1 }, value: STRING, regex: BOOLEAN, invertMatch: BOOLEAN },
      { required: ['name'] },
    ),
  ),
  queryParameters: listOf(
    closedObject({ name: { type: 'string', minLength: 1 }, value: STRING, regex: BOOLEAN }, { required: ['name'] }),
  ),
  method: { type: 'string', pattern: '^[A-Z]+$' },
  port: PORT_NUMBER,
});
