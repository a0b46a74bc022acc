import { Counter, Gauge, type Registry } from 'prom-client';

/** The mesh trust gauges of an agent, on its registry. */
export interface TrustMetrics {
  readonly intermediateNotAfter: Gauge;
  readonly workloadEarliestNotAfter: Gauge;
  readonly workloadCerts: Gauge;
  readonly appliedGeneration: Gauge;
  readonly errors: Counter<'stage'>;
}

export function createTrustMetrics(registry: Registry): TrustMetrics {
  const registers = [registry];
  return {
    intermediateNotAfter: new Gauge({
      name: 'relay_agent_mesh_intermediate_not_after_seconds',
      help: "notAfter (unix seconds) of the cluster's intermediate CA in cacerts; 0 when none is held",
      registers,
    }),
    workloadEarliestNotAfter: new Gauge({
      name: 'relay_agent_mesh_workload_cert_earliest_not_after_seconds',
      help: 'earliest notAfter (unix seconds) of the workload certificates the agent holds; 0 when none',
      registers,
    }),
    workloadCerts: new Gauge({
      name: 'relay_agent_mesh_workload_certs',
      help: 'workload identities holding a certificate issued by this agent',
      registers,
    }),
    appliedGeneration: new Gauge({
      name: 'relay_agent_mesh_trust_applied_generation',
      help: 'the mesh trust generation whose bundle and intermediate this cluster has written (0 = none)',
      registers,
    }),
    errors: new Counter({
      name: 'relay_agent_mesh_trust_errors_total',
      help: 'mesh trust steps that failed, by stage (call, response, intermediate, cacerts, workloads)',
      labelNames: ['stage'],
      registers,
    }),
  };
}
