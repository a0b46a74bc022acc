import { isRecord } from '@meshrelay/api';
import { effectivePolicy, type HostRule, type Policy } from './destination-rules.ts';
import { parseDuration } from './duration.ts';
import type { FindingList } from './findings.ts';
import { clusterName } from './names.ts';
import { upstreamTlsSocket } from './tls.ts';
import type { ServiceHost } from './types.ts';

/** Load-balancing algorithms a gRPC client has besides ROUND_ROBIN and RING_HASH: none. */
const SIMPLE_AS_ROUND_ROBIN = new Set(['LEAST_REQUEST', 'LEAST_CONN', 'RANDOM', 'PASSTHROUGH']);

/** gRPC clients refuse (NACK) a hash ring bigger than this (grpc-js-xds, as gRPC's A42 design says). */
export const MAX_RING_SIZE = 8_388_608;

/** The path of a policy field in the DestinationRule: the subset's own policy when it sets the field. */
type WhereOf = (field: string) => string;

function lbFields(
  rule: HostRule | undefined,
  policy: Policy,
  whereOf: WhereOf,
  findings: FindingList,
): Record<string, unknown> {
  const lb = isRecord(policy['loadBalancer']) ? policy['loadBalancer'] : {};
  const simple = typeof lb['simple'] === 'string' ? lb['simple'] : undefined;
  if (simple !== undefined && SIMPLE_AS_ROUND_ROBIN.has(simple) && rule) {
    findings.add(
      rule.resource,
      `${whereOf('loadBalancer')}.loadBalancer.simple`,
      `${simple} is not available to gRPC clients; ROUND_ROBIN is used`,
    );
  }
  const where = `${whereOf('loadBalancer')}.loadBalancer`;
  if (lb['warmupDurationSecs'] !== undefined && rule)
    findings.add(
      rule.resource,
      `${where}.warmupDurationSecs`,
      'slow start is not available to gRPC clients; new endpoints get their full share at once',
    );
  if (!isRecord(lb['consistentHash'])) return { lb_policy: 'ROUND_ROBIN' };
  const hash = lb['consistentHash'];
  if (isRecord(hash['maglev']) && rule)
    findings.add(
      rule.resource,
      `${where}.consistentHash.maglev`,
      'Maglev is not available to gRPC clients; a hash ring is used',
    );
  const ring = isRecord(hash['ringHash']) ? hash['ringHash'] : {};
  const field = typeof ring['minimumRingSize'] === 'number' ? 'ringHash.minimumRingSize' : 'minimumRingSize';
  let minimum =
    typeof ring['minimumRingSize'] === 'number'
      ? ring['minimumRingSize']
      : typeof hash['minimumRingSize'] === 'number'
        ? hash['minimumRingSize']
        : undefined;
  if (minimum !== undefined && minimum > MAX_RING_SIZE) {
    if (rule)
      findings.add(
        rule.resource,
        `${where}.consistentHash.${field}`,
        `gRPC clients refuse a hash ring over ${MAX_RING_SIZE} entries; ${MAX_RING_SIZE} is used`,
      );
    minimum = MAX_RING_SIZE;
  }
  return {
    lb_policy: 'RING_HASH',
    ring_hash_lb_config: {
      hash_function: 'XX_HASH',
      ...(minimum !== undefined ? { minimum_ring_size: { value: minimum } } : {}),
    },
  };
}

/**
 * istiod's outlier detection: consecutive 5xx (or gateway) errors eject, success-rate
 * ejection is switched off. gRPC clients eject only on success rate or failure percentage,
 * so on them this ejects nothing; failover still happens when endpoints stop answering.
 */
function outlierDetection(
  rule: HostRule | undefined,
  policy: Policy,
  whereOf: WhereOf,
  findings: FindingList,
): Record<string, unknown> | undefined {
  const od = isRecord(policy['outlierDetection']) ? policy['outlierDetection'] : undefined;
  if (od === undefined) return undefined;
  const out: Record<string, unknown> = { enforcing_success_rate: { value: 0 } };
  const five =
    typeof od['consecutive5xxErrors'] === 'number'
      ? od['consecutive5xxErrors']
      : typeof od['consecutiveErrors'] === 'number'
        ? od['consecutiveErrors']
        : undefined;
  if (five !== undefined && five > 0)
    Object.assign(out, { consecutive_5xx: { value: five }, enforcing_consecutive_5xx: { value: 100 } });
  else out['enforcing_consecutive_5xx'] = { value: 0 };
  const gateway = typeof od['consecutiveGatewayErrors'] === 'number' ? od['consecutiveGatewayErrors'] : undefined;
  if (gateway !== undefined && gateway > 0)
    Object.assign(out, {
      consecutive_gateway_failure: { value: gateway },
      enforcing_consecutive_gateway_failure: { value: 100 },
    });
  const interval = parseDuration(od['interval']);
  if (interval) out['interval'] = interval;
  const ejection = parseDuration(od['baseEjectionTime']);
  if (ejection) out['base_ejection_time'] = ejection;
  if (typeof od['maxEjectionPercent'] === 'number') out['max_ejection_percent'] = { value: od['maxEjectionPercent'] };
  if ((five !== undefined || gateway !== undefined) && rule) {
    findings.add(
      rule.resource,
      `${whereOf('outlierDetection')}.outlierDetection`,
      'gRPC clients do not eject on consecutive errors (only on success rate or failure percentage); endpoints that stop answering still fail over',
    );
  }
  return out;
}

/** connectionPool → circuit breakers; gRPC clients enforce max_requests only. */
function circuitBreakers(policy: Policy): Record<string, unknown> | undefined {
  const pool = isRecord(policy['connectionPool']) ? policy['connectionPool'] : undefined;
  if (pool === undefined) return undefined;
  const http = isRecord(pool['http']) ? pool['http'] : {};
  const tcp = isRecord(pool['tcp']) ? pool['tcp'] : {};
  const threshold: Record<string, unknown> = { priority: 'DEFAULT' };
  if (typeof tcp['maxConnections'] === 'number') threshold['max_connections'] = { value: tcp['maxConnections'] };
  if (typeof http['http1MaxPendingRequests'] === 'number')
    threshold['max_pending_requests'] = { value: http['http1MaxPendingRequests'] };
  if (typeof http['http2MaxRequests'] === 'number') threshold['max_requests'] = { value: http['http2MaxRequests'] };
  if (typeof http['maxRetries'] === 'number') threshold['max_retries'] = { value: http['maxRetries'] };
  return Object.keys(threshold).length > 1 ? { thresholds: [threshold] } : undefined;
}

/**
 * Istio's auto mTLS: with mesh trust on, a mesh destination is called over mTLS unless the
 * DestinationRule says DISABLE; a MESH_EXTERNAL ServiceEntry only when it says ISTIO_MUTUAL.
 * SIMPLE and MUTUAL name certificate files a gRPC client is never given: the mesh
 * certificate is used instead, so such calls fail rather than go out in plaintext.
 */
function transportSocket(
  sec: ClusterSecurity,
  rule: HostRule | undefined,
  policy: Policy,
  whereOf: WhereOf,
): Record<string, unknown> | undefined {
  if (!sec.meshTls) return undefined;
  const tls = isRecord(policy['tls']) ? policy['tls'] : {};
  const mode = typeof tls['mode'] === 'string' ? tls['mode'] : undefined;
  // The DestinationRule's subjectAltNames override the destination's own identities (as in istiod).
  const ruleSans = Array.isArray(tls['subjectAltNames'])
    ? tls['subjectAltNames'].filter((n): n is string => typeof n === 'string')
    : [];
  const sans = ruleSans.length > 0 ? ruleSans : (sec.host.subjectAltNames ?? []);
  if (mode === 'DISABLE') return undefined;
  if (mode === undefined) return sec.host.external === true ? undefined : upstreamTlsSocket(sans);
  if (mode !== 'ISTIO_MUTUAL' && rule)
    sec.findings.add(
      rule.resource,
      `${whereOf('tls')}.tls.mode`,
      `${mode} needs certificate files gRPC clients are not given; the mesh certificate is presented instead`,
    );
  return upstreamTlsSocket(sans);
}

/** What decides a cluster's transport: the destination, whether mesh trust is on, where findings go. */
interface ClusterSecurity {
  readonly host: ServiceHost;
  readonly meshTls: boolean;
  readonly findings: FindingList;
}

/**
 * One EDS cluster for a host's port (and subset), with the DestinationRule's policy and,
 * with mesh trust on, the mesh's mTLS (see transportSocket).
 */
function buildCluster(
  name: string,
  rule: HostRule | undefined,
  policy: Policy,
  whereOf: WhereOf,
  sec: ClusterSecurity,
): Record<string, unknown> {
  const findings = sec.findings;
  const cluster: Record<string, unknown> = {
    name,
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' }, service_name: name },
    ...lbFields(rule, policy, whereOf, findings),
  };
  const socket = transportSocket(sec, rule, policy, whereOf);
  if (socket) cluster['transport_socket'] = socket;
  const od = outlierDetection(rule, policy, whereOf, findings);
  if (od) cluster['outlier_detection'] = od;
  const breakers = circuitBreakers(policy);
  if (breakers) cluster['circuit_breakers'] = breakers;
  const connect =
    isRecord(policy['connectionPool']) && isRecord(policy['connectionPool']['tcp'])
      ? parseDuration(policy['connectionPool']['tcp']['connectTimeout'])
      : undefined;
  if (connect) cluster['connect_timeout'] = connect;
  return cluster;
}

/** A cluster the translation emits: its body and the subset labels its endpoints must carry. */
export interface ClusterPlan {
  readonly name: string;
  readonly host: ServiceHost;
  readonly port: number;
  readonly subsetLabels: Readonly<Record<string, string>>;
  readonly policy: Policy;
  readonly body: Record<string, unknown>;
}

/** Every cluster of a host: one per port, and one per port and DestinationRule subset. */
export function planClusters(
  host: ServiceHost,
  rule: HostRule | undefined,
  findings: FindingList,
  meshTls = false,
): ClusterPlan[] {
  const sec: ClusterSecurity = { host, meshTls, findings };
  const plans: ClusterPlan[] = [];
  for (const port of host.ports) {
    const policy = effectivePolicy(rule, port.number, undefined);
    const name = clusterName(host.host, port.number);
    plans.push({
      name,
      host,
      port: port.number,
      subsetLabels: {},
      policy,
      body: buildCluster(name, rule, policy, () => 'spec.trafficPolicy', sec),
    });
    (rule?.subsets ?? []).forEach((subset, i) => {
      const subsetPolicy = effectivePolicy(rule, port.number, subset);
      const subsetName = clusterName(host.host, port.number, subset.name);
      const whereOf = (field: string): string =>
        subset.trafficPolicy?.[field] !== undefined ? `spec.subsets[${i}].trafficPolicy` : 'spec.trafficPolicy';
      plans.push({
        name: subsetName,
        host,
        port: port.number,
        subsetLabels: subset.labels,
        policy: subsetPolicy,
        body: buildCluster(subsetName, rule, subsetPolicy, whereOf, sec),
      });
    });
  }
  return plans;
}
