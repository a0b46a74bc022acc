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

/**
 * Traffic to a VirtualDestination is always mutual TLS (the remote gateway routes on the SNI
 * Istio sets for ISTIO_MUTUAL). Failover needs outlier detection to eject unhealthy endpoints,
 * so a FailoverPolicy without an OutlierDetectionPolicy gets Gloo's default detection.
 */
export function buildDestinationRules(
  vd: VirtualDestinationModel,
  policies: DestinationPolicies,
  subsets: readonly Record<string, unknown>[] = [],
): Resource[] {
  const trafficPolicy: Record<string, unknown> = { tls: { mode: 'ISTIO_MUTUAL' } };
  const loadBalancer = {
    ...(policies.loadBalancer ? loadBalancerSettings(policies.loadBalancer.spec) : {}),
    ...(policies.failover ? { localityLbSetting: localityLbSetting(policies.failover.spec) } : {}),
  };
  if (Object.keys(loadBalancer).length > 0) trafficPolicy['loadBalancer'] = loadBalancer;
  if (policies.outlierDetection || policies.failover)
    trafficPolicy['outlierDetection'] = outlierDetection(policies.outlierDetection?.spec);
  return vd.hosts.map((host, i) => ({
    apiVersion: KINDS.DestinationRule.apiVersion,
    kind: KINDS.DestinationRule.kind,
    metadata: outputMetadata(virtualDestinationOutputName(vd.owned.name, i), vd.owned.namespace),
    spec: subsets.length > 0 ? { host, trafficPolicy, subsets } : { host, trafficPolicy },
  }));
}
