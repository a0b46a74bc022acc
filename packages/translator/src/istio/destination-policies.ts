/**
 * Which FailoverPolicy, OutlierDetectionPolicy and LoadBalancerPolicy apply to each
 * VirtualDestination, and the DestinationRule fields they become. One policy of each kind applies to a destination: the
 * first by (namespace, name); the others are reported.
 */
import type {
  DestinationSelector,
  FailoverPolicySpec,
  LoadBalancerPolicySpec,
  Locality,
  OutlierDetectionPolicySpec,
} from '../gloo/gloo-types.ts';
import { describeOwned, type Owned } from '../gloo/inventory.ts';
import type { ProblemSink } from '../engine/problems.ts';
import { matchesObjectSelector } from '../gloo/selectors.ts';
import type { VirtualDestinationModel } from '../gloo/virtual-destinations.ts';
import { fillWeights } from '../gloo/weights.ts';

/**
 * Gloo's documented OutlierDetectionPolicy defaults; also used when failover is configured without one (Istio needs
 * it).
 */
export const DEFAULT_OUTLIER_DETECTION = {
  consecutive5xxErrors: 5,
  interval: '10s',
  baseEjectionTime: '30s',
  maxEjectionPercent: 100,
} as const;

export interface DestinationPolicies {
  readonly failover?: Owned<FailoverPolicySpec>;
  readonly outlierDetection?: Owned<OutlierDetectionPolicySpec>;
  readonly loadBalancer?: Owned<LoadBalancerPolicySpec>;
}

interface DestinationPolicy {
  readonly applyToDestinations?: readonly DestinationSelector[];
}

/** Whether `policy` selects `vd`; reports selectors Meshrelay cannot honour (other kinds, port-level). */
function selects(policy: Owned<DestinationPolicy>, vd: VirtualDestinationModel, problems: ProblemSink): boolean {
  // A policy applies only to destinations of its own workspace.
  if (vd.owned.workspace !== policy.workspace) return false;
  const selectors = policy.spec.applyToDestinations ?? [];
  if (selectors.length === 0) return true;
  return selectors.some((s, i) => {
    if ((s.kind ?? 'SERVICE') !== 'VIRTUAL_DESTINATION') {
      problems.add({
        cluster: policy.cluster,
        resource: describeOwned(policy),
        reason: `applyToDestinations[${i}]: only kind VIRTUAL_DESTINATION is supported; ignored`,
      });
      return false;
    }
    if (s.port !== undefined) {
      problems.add({
        cluster: policy.cluster,
        resource: describeOwned(policy),
        reason: `applyToDestinations[${i}]: port-level policies are not supported; ignored`,
      });
      return false;
    }
    const vdObject = {
      name: vd.owned.name,
      namespace: vd.owned.namespace,
      cluster: vd.owned.cluster,
      labels: vd.owned.labels,
      workspace: vd.owned.workspace,
    };
    return matchesObjectSelector(s.selector, vdObject);
  });
}

function pickPolicy<T extends DestinationPolicy>(
  policies: readonly Owned<T>[],
  vd: VirtualDestinationModel,
  problems: ProblemSink,
): Owned<T> | undefined {
  let winner: Owned<T> | undefined;
  for (const policy of policies) {
    if (!selects(policy, vd, problems)) continue;
    if (!winner) winner = policy;
    else {
      problems.add({
        cluster: policy.cluster,
        resource: describeOwned(policy),
        reason: `not applied to ${describeOwned(vd.owned)}: ${describeOwned(winner)} already applies to it`,
      });
    }
  }
  return winner;
}

export function policiesFor(
  vd: VirtualDestinationModel,
  failover: readonly Owned<FailoverPolicySpec>[],
  outlier: readonly Owned<OutlierDetectionPolicySpec>[],
  loadBalancer: readonly Owned<LoadBalancerPolicySpec>[],
  problems: ProblemSink,
): DestinationPolicies {
  return {
    failover: pickPolicy(failover, vd, problems),
    outlierDetection: pickPolicy(outlier, vd, problems),
    loadBalancer: pickPolicy(loadBalancer, vd, problems),
  };
}

/**
 * LoadBalancerPolicy config -> the Istio loadBalancer fields it sets (simple or consistentHash,
 * warmupDurationSecs); UNSPECIFIED sets nothing. healthyPanicThreshold and updateMergeWindow
 * have no Istio field: they are reported by the schema's unimplemented marks.
 */
export function loadBalancerSettings(spec: LoadBalancerPolicySpec): Record<string, unknown> {
  const c = spec.config;
  const out: Record<string, unknown> = {};
  if (c.simple !== undefined && c.simple !== 'UNSPECIFIED') out['simple'] = c.simple;
  if (c.consistentHash !== undefined) out['consistentHash'] = { ...c.consistentHash };
  if (c.warmupDurationSecs !== undefined) out['warmupDurationSecs'] = c.warmupDurationSecs;
  return out;
}

/** Istio's locality string for a Gloo locality, with `*` for the parts not given. */
function localityPattern(l: Locality): string {
  if (l.zone === undefined || l.zone === '') return `${l.region}/*`;
  if (l.subZone === undefined || l.subZone === '') return `${l.region}/${l.zone}/*`;
  return `${l.region}/${l.zone}/${l.subZone}`;
}

function isRegionOnly(l: Locality): boolean {
  return (l.zone ?? '') === '' && (l.subZone ?? '') === '';
}

/**
 * FailoverPolicy config -> Istio localityLbSetting. Region-to-region mappings without weights
 * (one target per source) are Istio `failover`; anything finer or weighted is `distribute`;
 * priority labels are `failoverPriority`.
 */
export function localityLbSetting(spec: FailoverPolicySpec): Record<string, unknown> {
  const setting: Record<string, unknown> = { enabled: true };
  const mappings = spec.config.localityMappings ?? [];
  if (spec.config.priorityLabels) setting['failoverPriority'] = [...spec.config.priorityLabels.labels];
  if (mappings.length === 0) return setting;
  const plainFailover = mappings.every(
    (m) => isRegionOnly(m.from) && m.to.length === 1 && m.to.every((t) => isRegionOnly(t) && t.weight === undefined),
  );
  if (plainFailover) {
    setting['failover'] = mappings.map((m) => ({ from: m.from.region, to: (m.to[0] as Locality).region }));
  } else {
    setting['distribute'] = mappings.map((m) => {
      const w = fillWeights(m.to);
      return {
        from: localityPattern(m.from),
        to: Object.fromEntries(m.to.map((t, i) => [localityPattern(t), w[i] as number])),
      };
    });
  }
  return setting;
}

/** OutlierDetectionPolicy config -> Istio outlierDetection, with Gloo's defaults for unset fields. */
export function outlierDetection(spec: OutlierDetectionPolicySpec | undefined): Record<string, unknown> {
  const c = spec?.config ?? {};
  return {
    consecutive5xxErrors: c.consecutiveErrors ?? DEFAULT_OUTLIER_DETECTION.consecutive5xxErrors,
    ...(c.consecutiveGatewayErrors !== undefined ? { consecutiveGatewayErrors: c.consecutiveGatewayErrors } : {}),
    interval: c.interval ?? DEFAULT_OUTLIER_DETECTION.interval,
    baseEjectionTime: c.baseEjectionTime ?? DEFAULT_OUTLIER_DETECTION.baseEjectionTime,
    maxEjectionPercent: c.maxEjectionPercent ?? DEFAULT_OUTLIER_DETECTION.maxEjectionPercent,
  };
}
