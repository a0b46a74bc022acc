import type { InputSnapshot, OutputSnapshot } from '@meshrelay/api';

/** What the translator knows about a workload cluster beyond its input snapshot. */
export interface ClusterInfo {
  readonly name: string;
  /** SPIFFE trust domain of the cluster's workloads; defaults to the cluster name. */
  readonly trustDomain?: string;
  /** Istio network of the cluster's workloads; defaults to the cluster name. */
  readonly network?: string;
  /** Kubernetes DNS domain; defaults to `cluster.local`. */
  readonly clusterDomain?: string;
}

export interface TranslationInput {
  /** Admitted input snapshots by cluster name. Only these clusters get outputs. */
  readonly inputs: ReadonlyMap<string, InputSnapshot>;
  readonly clusters: readonly ClusterInfo[];
  /** Allocated virtual IPs by `<namespace>/<name>` of the VirtualDestination. */
  readonly vips: ReadonlyMap<string, string>;
}

/** Something the translator could not honour, naming where it came from. */
export interface TranslationProblem {
  readonly cluster?: string;
  /** The resource the problem is about, as `formatResourceKey` prints it. */
  readonly resource?: string;
  readonly reason: string;
}

export interface TranslationResult {
  /** One output per admitted cluster whose outputs all validated. */
  readonly outputs: ReadonlyMap<string, OutputSnapshot>;
  readonly problems: readonly TranslationProblem[];
}
