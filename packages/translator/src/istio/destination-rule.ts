/**
 * VirtualDestination (+ FailoverPolicy, OutlierDetectionPolicy, LoadBalancerPolicy) -> DestinationRules, one per host.
 */
import { KINDS, type Resource } from '@meshrelay/api';
import {
  loadBalancerSettings,
  localityLbSetting,
  outlierDetection,
  type DestinationPolicies,
} from './destination-policies.ts';
import { outputMetadata, virtualDestinationOutputName } from './names.ts';
import type { VirtualDestinationModel } from '../gloo/virtual-destinations.ts';
import type { BalancingPolicy, SemanticAddresses } from './policy-vips.ts';
import { instanceOutputName, policyHosts, policyOutputName, prefixedHosts } from './semantic-entries.ts';

/**
 * Traffic to a VirtualDestination is always mutual TLS (the remote gateway routes on the SNI
 * Istio sets for ISTIO_MUTUAL). Failover needs outlier detection to eject unhealthy endpoints,
 * so a FailoverPolicy without an OutlierDetectionPolicy gets Gloo's default detection.
 */
export function buildDestinationRules(
  vd: VirtualDestinationModel,
  policies: DestinationPolicies,
  subsets: readonly Record<string, unknown>[] = [],
  addresses: SemanticAddresses = { policies: [], instances: [] },
): Resource[] {
  const trafficPolicy: Record<string, unknown> = { tls: { mode: 'ISTIO_MUTUAL' } };
  const loadBalancer = {
    ...(policies.loadBalancer ? loadBalancerSettings(policies.loadBalancer.spec) : {}),
    ...(policies.failover ? { localityLbSetting: localityLbSetting(policies.failover.spec) } : {}),
  };
  if (Object.keys(loadBalancer).length > 0) trafficPolicy['loadBalancer'] = loadBalancer;
  if (policies.outlierDetection || policies.failover)
    trafficPolicy['outlierDetection'] = outlierDetection(policies.outlierDetection?.spec);
  const rule = (name: string, host: string, policy: Record<string, unknown>, withSubsets: boolean): Resource => ({
    apiVersion: KINDS.DestinationRule.apiVersion,
    kind: KINDS.DestinationRule.kind,
    metadata: outputMetadata(name, vd.owned.namespace),
    spec:
      withSubsets && subsets.length > 0 ? { host, trafficPolicy: policy, subsets } : { host, trafficPolicy: policy },
  });
  const out = vd.hosts.map((host, i) =>
    rule(virtualDestinationOutputName(vd.owned.name, i), host, trafficPolicy, true),
  );
  for (const { policy } of addresses.policies) {
    const own = balancingTrafficPolicy(policy, policies);
    policyHosts(policy, vd.hosts).forEach((host, i) =>
      out.push(rule(policyOutputName(vd.owned.name, policy, i), host, own, false)),
    );
  }
  // An instance is one endpoint set: no subsets, no locality choice; only the transport.
  for (const { id } of addresses.instances) {
    prefixedHosts(id, vd.hosts).forEach((host, i) =>
      out.push(rule(instanceOutputName(vd.owned.name, id, i), host, { tls: { mode: 'ISTIO_MUTUAL' } }, false)),
    );
  }
  return out;
}

/**
 * The traffic policy a balancing policy's hosts get. Round robin turns locality load balancing
 * off (every locality in one priority, each weighted by its endpoints: remote gateway entries
 * weigh their instance counts) and ejects
 * outliers only when the destination asks for it. Closest keeps locality load balancing on with
 * outlier detection (failover needs it to move down a priority), the destination's failover
 * rules, detection and load balancer settings if it has them, Gloo's defaults if not.
 */
function balancingTrafficPolicy(policy: BalancingPolicy, policies: DestinationPolicies): Record<string, unknown> {
  const base = policies.loadBalancer ? loadBalancerSettings(policies.loadBalancer.spec) : {};
  if (policy === 'round-robin') {
    // The host promises round robin: a consistent hash or another algorithm of the destination does not apply.
    const { warmupDurationSecs } = base as { warmupDurationSecs?: unknown };
    const out: Record<string, unknown> = {
      tls: { mode: 'ISTIO_MUTUAL' },
      loadBalancer: {
        simple: 'ROUND_ROBIN',
        ...(warmupDurationSecs !== undefined ? { warmupDurationSecs } : {}),
        localityLbSetting: { enabled: false },
      },
    };
    if (policies.outlierDetection) out['outlierDetection'] = outlierDetection(policies.outlierDetection.spec);
    return out;
  }
  return {
    tls: { mode: 'ISTIO_MUTUAL' },
    loadBalancer: {
      ...base,
      localityLbSetting: policies.failover ? localityLbSetting(policies.failover.spec) : { enabled: true },
    },
    outlierDetection: outlierDetection(policies.outlierDetection?.spec),
  };
}
