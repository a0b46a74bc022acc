import type { InputJudgements } from '../gloo/input-validation.ts';
import type { InputSnapshot, OutputSnapshot, Resource } from '@meshrelay/api';

/** What the translator knows about a workload cluster beyond its input snapshot. */
export interface ClusterInfo {
  readonly name: string;
  /**
   * SPIFFE trust domain of the cluster's workloads (Istio's meshConfig.trustDomain), when the
   * registry sets it (KubernetesCluster spec.trustDomain). Otherwise the one in the mesh config
   * ConfigMap of the cluster's input, else Istio's default `cluster.local`.
   */
  readonly trustDomain?: string;
  /** Istio network of the cluster's workloads; defaults to the cluster name. */
  readonly network?: string;
  /** Kubernetes DNS domain; defaults to `cluster.local`. */
  readonly clusterDomain?: string;
  /** The registry's labels of the cluster (Workspaces select clusters by them). */
  readonly labels?: Readonly<Record<string, string>>;
}

/** One output a Gloo resource produced (or last produced while it was good), with its consumer. */
export interface ProducedOutput {
  readonly cluster: string;
  readonly resource: Resource;
}

export interface TranslationInput {
  /** Admitted input snapshots by cluster name. Only these clusters get outputs. */
  readonly inputs: ReadonlyMap<string, InputSnapshot>;
  readonly clusters: readonly ClusterInfo[];
  /** Allocated virtual IPs by `<namespace>/<name>` of the VirtualDestination. */
  readonly vips: ReadonlyMap<string, string>;
  /**
   * The previous result's `securityOutputs`: the last good outputs of each security-relevant
   * resource by source id. A security resource that cannot be translated now keeps these.
   */
  readonly previousSecurityOutputs?: ReadonlyMap<string, readonly ProducedOutput[]>;
  /**
   * The previous result's `nameOwners`: when clusters of one workspace define the same name, the
   * cluster whose definition was used keeps it (the last good translation stays).
   */
  readonly previousNameOwners?: ReadonlyMap<string, string>;
  /**
   * Workspaces, defined on the management plane (admin.gloo.solo.io/v2 Workspace resources).
   * None: one implicit workspace owns every namespace of every cluster.
   */
  readonly workspaces?: readonly Resource[];
  /**
   * What the caller's intake found when it judged input lists (a server's, see InputJudgements):
   * a list recorded clean is admitted without validating each resource again. None: every input
   * is validated here. The result is the same either way.
   */
  readonly judgements?: Pick<InputJudgements, 'isClean'>;
}

/** Gloo's approval states (common.gloo.solo.io.ApprovalState), without PENDING and UNLICENSED. */
export type Approval = 'ACCEPTED' | 'WARNING' | 'INVALID' | 'FAILED';

/** Gloo's common.gloo.solo.io.State. */
export interface ResourceState {
  readonly observedGeneration: number;
  readonly approval: Approval;
  readonly message: string;
}

/** An output by identity and the cluster it goes to. */
export interface OutputRef {
  readonly cluster: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** What happened to one Gloo input resource in one translation. */
export interface ResourceStatus {
  /** `Kind/namespace/name@cluster`: the id the `meshrelay.io/sources` annotation uses. */
  readonly source: string;
  /** The cluster whose input snapshot carries the resource (whose agent writes this status). */
  readonly cluster: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** status.state as Gloo writes it: the worst approval over the whole mesh. */
  readonly state: ResourceState;
  /** Per consuming cluster: the state of what this resource contributed there. */
  readonly clusters: Readonly<Record<string, ResourceState>>;
  /** The outputs it produced that went out, sorted by cluster then identity. */
  readonly outputs: readonly OutputRef[];
}

/** Something the translator could not honour, naming where it came from. */
export interface TranslationProblem {
  readonly cluster?: string;
  /** The resource the problem is about, as `formatResourceKey` prints it. */
  readonly resource?: string;
  readonly reason: string;
  /** What the problem does to the resource's approval; WARNING when not given. */
  readonly approval?: Exclude<Approval, 'ACCEPTED'>;
}

export interface TranslationResult {
  /** One output per admitted cluster; a failed resource's outputs are left out, nothing else. */
  readonly outputs: ReadonlyMap<string, OutputSnapshot>;
  readonly problems: readonly TranslationProblem[];
  /** One status per Gloo input resource of every admitted cluster, sorted by source id. */
  readonly statuses: readonly ResourceStatus[];
  /** The good outputs of each security-relevant resource, to pass back as `previousSecurityOutputs`. */
  readonly securityOutputs: ReadonlyMap<string, readonly ProducedOutput[]>;
  /** The cluster whose definition of each Gloo name is used, to pass back as `previousNameOwners`. */
  readonly nameOwners: ReadonlyMap<string, string>;
}
