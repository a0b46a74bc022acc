/**
 * Schemas of the policy specs: security.policy.gloo.solo.io/v2 AccessPolicy and
 * resilience.policy.gloo.solo.io/v2 FailoverPolicy, OutlierDetectionPolicy, RetryTimeoutPolicy.
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
  type JsonSchema,
} from './gloo-common.ts';

/** AccessPolicySpec.NamespaceWorkloadSelector */
const NAMESPACE_WORKLOAD_SELECTOR = closedObject({
  selector: closedObject({ labels: STRING_MAP, namespace: STRING, cluster: STRING, workspace: STRING }),
});

const HTTP_METHOD: JsonSchema = { type: 'string', pattern: '^[A-Z]+$' };

export const ACCESS_POLICY_SPEC = closedObject(
  {
    applyToDestinations: listOf(ACCESS_DESTINATION_SELECTOR),
    applyToWorkloads: listOf(NAMESPACE_WORKLOAD_SELECTOR),
    config: closedObject(
      {
        authz: closedObject({
          allowedClients: listOf(IDENTITY_SELECTOR),
          allowedPaths: STRING_LIST,
          allowedMethods: listOf(HTTP_METHOD),
          allowedIpBlocks: STRING_LIST,
          allowedRemoteIpBlocks: STRING_LIST,
        }),
      },
      { required: ['authz'] },
    ),
  },
  { required: ['config'] },
);

/** FailoverPolicySpec.Config.LocalityMappings */
const LOCALITY = { region: { type: 'string', minLength: 1 }, zone: STRING, subZone: STRING };
const LOCALITY_MAPPING = closedObject(
  {
    from: closedObject(LOCALITY, { required: ['region'] }),
    to: listOf(closedObject({ ...LOCALITY, weight: { type: 'integer', minimum: 0, maximum: 100 } }, { required: ['region'] }), { minItems: 1 }),
  },
  { required: ['from', 'to'] },
);

export const FAILOVER_POLICY_SPEC = closedObject(
  {
    applyToDestinations: listOf(DESTINATION_SELECTOR),
    config: closedObject(
      {
        localityMappings: listOf(LOCALITY_MAPPING),
        priorityLabels: closedObject({ labels: listOf({ type: 'string', minLength: 1 }, { minItems: 1 }) }, { required: ['labels'] }),
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
      interval: DURATION,
      baseEjectionTime: DURATION,
      maxEjectionPercent: { type: 'integer', minimum: 0, maximum: 100 },
    }),
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
