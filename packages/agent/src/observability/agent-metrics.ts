import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/** The agent's Prometheus metrics, on a registry of its own (several agents may share a process in tests). */
export interface AgentMetrics {
  readonly registry: Registry;
  readonly pushConnected: Gauge;
  readonly pullConnected: Gauge;
  readonly snapshotsPushed: Counter;
  readonly snapshotsRejected: Counter;
  readonly outputsApplied: Counter;
  readonly inputProblems: Gauge;
  readonly inputGeneration: Gauge;
  /** 1 while this replica leads (and so relays); always 1 without leader election. */
  readonly leader: Gauge;
}

export interface AgentMetricsOptions {
  /** Process metrics (CPU, memory, event loop); default on. */
  readonly defaultMetrics?: boolean;
  /** Read at scrape time. */
  readonly inputProblems?: () => number;
}

export function createAgentMetrics(cluster: string, options: AgentMetricsOptions = {}): AgentMetrics {
  const problems = options.inputProblems;
  const registry = new Registry();
  registry.setDefaultLabels({ cluster });
  // Event-loop delay sampled every 100 ms rather than prom-client's 10 ms: a stall is still seen, and an idle agent
  // wakes 10 times less.
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const registers = [registry];
  return {
    registry,
    pushConnected: new Gauge({
      name: 'relay_agent_push_connected',
      help: '1 while the push stream to a management server is open',
      registers,
    }),
    pullConnected: new Gauge({
      name: 'relay_agent_pull_connected',
      help: '1 while the pull stream from a management server is open',
      registers,
    }),
    snapshotsPushed: new Counter({
      name: 'relay_agent_snapshots_pushed_total',
      help: 'input snapshots sent to a management server',
      registers,
    }),
    snapshotsRejected: new Counter({
      name: 'relay_agent_snapshots_rejected_total',
      help: 'input snapshots a management server acked with accepted=false',
      registers,
    }),
    outputsApplied: new Counter({
      name: 'relay_agent_outputs_applied_total',
      help: 'output snapshots written to the output directory',
      registers,
    }),
    inputProblems: new Gauge({
      name: 'relay_agent_input_problems',
      help: 'manifest problems (unreadable files, invalid resources, duplicates) in the latest scan',
      registers,
      collect() {
        if (problems) this.set(problems());
      },
    }),
    inputGeneration: new Gauge({
      name: 'relay_agent_input_generation',
      help: 'generation of the latest input snapshot',
      registers,
    }),
    leader: new Gauge({
      name: 'relay_agent_leader',
      help: '1 while this replica holds the leader lease and relays, 0 while it follows',
      registers,
    }),
  };
}
