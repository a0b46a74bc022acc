/**
 * Schemas of the policy specs: security.policy.gloo.solo.io/v2 AccessPolicy and
 * resilience.policy.gloo.solo.io/v2 FailoverPolicy, OutlierDetectionPolicy, RetryTimeoutPolicy,
 * following solo-apis gloo-mesh-v2.6.x (policy/v2/security, policy/v2/resilience).
 */
import {
  ACCESS_DESTINATION_SELECTOR,
  BOOLEAN,
  DESTINATION_SELECTOR,
  DURATION,
  IDENTITY_SELECTOR,
  ROUTE_SELECTOR,
  STRING,
  STRING_LIST,
  STRING_MAP,
  UINT32,
  closedObject,
  listOf,
  unimplemented,
  unimplementedSecurity,
  type JsonSchema,
} from './gloo-common.ts';

/** AccessPolicySpec.NamespaceWorkloadSelector */
const NAMESPACE_WORKLOAD_SELECTOR = closedObject({
  selector: closedObject({ labels: STRING_MAP, namespace: STRING, cluster: STRING, workspace: STRING }),
});

const HTTP_METHOD: JsonSchema = { type: 'string', pattern: '^[A-Z]+$' };

/** AccessPolicySpec.Config.Authorization.MatchSpec: header conditions on the request. */
const MATCH_SPEC = closedObject({
  request: closedObject({
    headers: { type: 'object', additionalProperties: closedObject({ values: STRING_LIST, notValues: STRING_LIST }) },
  }),
});

/** AccessPolicySpec.Config.Authorization */
const AUTHORIZATION = closedObject({
  allowedClients: listOf(IDENTITY_SELECTOR),
  allowedPaths: STRING_LIST,
  allowedMethods: listOf(HTTP_METHOD),
  match: MATCH_SPEC,
  allowedIpBlocks: STRING_LIST,
  allowedRemoteIpBlocks: STRING_LIST,
  dryRun: BOOLEAN,
});

export const ACCESS_POLICY_SPEC = closedObject(
  {
    applyToDestinations: listOf(ACCESS_DESTINATION_SELECTOR),
    applyToWorkloads: listOf(NAMESPACE_WORKLOAD_SELECTOR),
    config: closedObject({
      authn: closedObject({ tlsMode: { enum: ['DISABLE', 'PERMISSIVE', 'STRICT'] } }),
      authz: AUTHORIZATION,
      enforcementLayers: unimplementedSecurity(closedObject({ cni: BOOLEAN, mesh: BOOLEAN })),
      authzList: listOf(AUTHORIZATION),
    }),
  },
  { required: ['config'] },
);

/** FailoverPolicySpec.Config.LocalityMappings */
const LOCALITY = { region: { type: 'string', minLength: 1 }, zone: STRING, subZone: STRING };
const LOCALITY_MAPPING = closedObject(
  {
    from: closedObject(LOCALITY, { required: ['region'] }),
    to: listOf(
      closedObject({ ...LOCALITY, weight: { type: 'integer', minimum: 0, maximum: 100 } }, { required: ['region'] }),
      { minItems: 1 },
    ),
  },
  { required: ['from', 'to'] },
);

export const FAILOVER_POLICY_SPEC = closedObject(
  {
    applyToDestinations: listOf(DESTINATION_SELECTOR),
    config: closedObject(
      {
        localityMappings: listOf(LOCALITY_MAPPING),
        priorityLabels: closedObject(
          { labels: listOf({ type: 'string', minLength: 1 }, { minItems: 1 }) },
          { required: ['labels'] },
        ),
      },
      { not: { required: ['localityMappings', 'priorityLabels'] } },
    ),
  },
  { required: ['config'] },
);

export const OUTLIER_DETECTION_POLICY_SPEC = closedObject(
  {
    applyToDestinations: listOf(DESTINATION_SELECTOR),
    config: closedObject({
      consecutiveErrors: UINT32,
      consecutiveGatewayErrors: UINT32,
      interval: DURATION,
      baseEjectionTime: DURATION,
      maxEjectionPercent: { type: 'integer', minimum: 0, maximum: 100 },
    }),
  },
  { required: ['config'] },
);

/** LoadBalancerPolicySpec.Config.ConsistentHashLB: exactly one hash key. */
const CONSISTENT_HASH = closedObject(
  {
    httpHeaderName: STRING,
    httpCookie: closedObject({ name: STRING, path: STRING, ttl: DURATION }, { required: ['name'] }),
    useSourceIp: BOOLEAN,
    httpQueryParameterName: STRING,
  },
  {
    oneOf: [
      { required: ['httpHeaderName'] },
      { required: ['httpCookie'] },
      { required: ['useSourceIp'] },
      { required: ['httpQueryParameterName'] },
    ],
  },
);

/** trafficcontrol.policy.gloo.solo.io/v2 LoadBalancerPolicy (policy/v2/trafficcontrol/load_balancer_policy.proto). */
export const LOAD_BALANCER_POLICY_SPEC = closedObject(
  {
    applyToDestinations: listOf(DESTINATION_SELECTOR),
    config: closedObject(
      {
        simple: { enum: ['UNSPECIFIED', 'RANDOM', 'PASSTHROUGH', 'ROUND_ROBIN', 'LEAST_REQUEST'] },
        consistentHash: CONSISTENT_HASH,
        warmupDurationSecs: DURATION,
        // Istio's DestinationRule has no place for these two.
        healthyPanicThreshold: unimplemented({ type: 'number', minimum: 0, maximum: 100 }),
        updateMergeWindow: unimplemented(DURATION),
      },
      // lb_policy is a oneof in the proto.
      { not: { required: ['simple', 'consistentHash'] } },
    ),
  },
  { required: ['config'] },
);

const RETRY_POLICY = closedObject({
  attempts: { type: 'integer', minimum: 0, maximum: 2147483647 },
  perTryTimeout: DURATION,
  retryOn: { type: 'string', pattern: '^[^,]+(,[^,]+)*$' },
  retryRemoteLocalities: BOOLEAN,
});

export const RETRY_TIMEOUT_POLICY_SPEC = closedObject(
  {
    applyToRoutes: listOf(ROUTE_SELECTOR),
    config: closedObject(
      { retries: RETRY_POLICY, requestTimeout: DURATION },
      { anyOf: [{ required: ['retries'] }, { required: ['requestTimeout'] }] },
    ),
  },
  { required: ['config'] },
);
