// RootTrustPolicy CRs in the management namespace, followed from the Kubernetes API and parsed
// (root-trust-policy.ts). Reported through current()/onChange() to the management server's mesh
// trust, which acts on the one in force.
//
// As with Workspaces, an invalid edit keeps the previous valid version of that policy in force
// and is reported naming the field. One policy applies: when several exist, the first by name
// is the one reported and the others are named as ignored.

import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  startKubernetesResourceWatch,
  type KubernetesResourceWatch,
  type WatchedObjects,
  type WatchedResourceKind,
} from './kubernetes-resource-watch.ts';
import { parseRootTrustPolicy, type RootTrustPolicy } from './root-trust-policy.ts';

export const ROOT_TRUST_POLICY_API: WatchedResourceKind = {
  group: 'admin.gloo.solo.io',
  version: 'v2',
  plural: 'roottrustpolicies',
  kind: 'RootTrustPolicy',
};

export interface RootTrustPolicyState {
  /** The policy read (its last valid version), if any. */
  readonly policy: RootTrustPolicy | undefined;
  /** Invalid or ignored RootTrustPolicy objects, one line each naming the object and field. */
  readonly problems: readonly string[];
  /** False while the API server does not serve the kind (no CRD installed). */
  readonly served: boolean;
}

export interface RootTrustPolicySource {
  /** The state now; a new object after each change. */
  current(): RootTrustPolicyState;
  /** Called with the new state after a change. Returns an unsubscribe function. */
  onChange(listener: (state: RootTrustPolicyState) => void): () => void;
  close(): Promise<void>;
}

export interface KubernetesRootTrustPolicyOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly logger: Logger;
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  readonly initialSyncTimeoutMs?: number;
}

export async function startKubernetesRootTrustPolicy(
  options: KubernetesRootTrustPolicyOptions,
): Promise<RootTrustPolicySource> {
  const policies = new RootTrustPolicySet(options.namespace, options.logger);
  const watch = await startKubernetesResourceWatch({ ...options, kind: ROOT_TRUST_POLICY_API }, (current) =>
    policies.apply(current),
  );
  return policies.attach(watch);
}

export class RootTrustPolicySet implements RootTrustPolicySource {
  readonly #namespace: string;
  readonly #logger: Logger;
  readonly #listeners = new Set<(state: RootTrustPolicyState) => void>();
  readonly #good = new Map<string, RootTrustPolicy>();
  #state: RootTrustPolicyState = { policy: undefined, problems: [], served: true };
  #watch: KubernetesResourceWatch | undefined;

  constructor(namespace: string, logger: Logger) {
    this.#namespace = namespace;
    this.#logger = logger;
  }

  attach(watch: KubernetesResourceWatch): this {
    this.#watch = watch;
    return this;
  }

  current(): RootTrustPolicyState {
    return this.#state;
  }

  onChange(listener: (state: RootTrustPolicyState) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    await this.#watch?.close();
  }

  apply(current: WatchedObjects): void {
    const present = new Set<string>();
    const problems: string[] = [];
    for (const obj of current.objects) {
      const name = obj.metadata?.name ?? '';
      present.add(name);
      const parsed = parseRootTrustPolicy(obj);
      if ('value' in parsed) {
        this.#good.set(name, parsed.value);
        continue;
      }
      const kept = this.#good.has(name) ? 'its previous valid version is kept' : 'ignored (it never was valid)';
      problems.push(`RootTrustPolicy ${this.#namespace}/${name}: ${parsed.problem}; ${kept}`);
    }
    for (const name of [...this.#good.keys()]) if (!present.has(name)) this.#good.delete(name);
    const [policy, ...others] = [...this.#good.values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const other of others)
      problems.push(
        `RootTrustPolicy ${this.#namespace}/${other.name}: ignored: one RootTrustPolicy applies, and ${this.#namespace}/${policy?.name ?? ''} (first by name) is the one read`,
      );
    problems.sort();
    const state: RootTrustPolicyState = {
      policy,
      problems: Object.freeze(problems),
      served: current.served,
    };
    if (JSON.stringify(state) === JSON.stringify(this.#state)) return;
    this.#report(state);
    this.#state = state;
    for (const listener of this.#listeners) listener(state);
  }

  #report(state: RootTrustPolicyState): void {
    for (const problem of state.problems.filter((p) => !this.#state.problems.includes(p)))
      this.#logger.error({ kind: 'RootTrustPolicy', problem }, 'invalid RootTrustPolicy');
    if (JSON.stringify(state.policy) === JSON.stringify(this.#state.policy)) return;
    if (state.policy === undefined) this.#logger.info({ kind: 'RootTrustPolicy' }, 'no RootTrustPolicy');
    else
      this.#logger.info(
        { kind: 'RootTrustPolicy', policy: state.policy },
        `RootTrustPolicy ${state.policy.namespace}/${state.policy.name} in force`,
      );
  }
}
