// Writes status conditions of KubernetesCluster CRs through the status subresource with
// resourceVersion-guarded replaces (idempotent, conflict-safe writes; see
// kubernetes-cluster-registry.ts for why every replica may write them).

import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { CLUSTER_WARM_CONDITION, type ClusterCondition } from '@meshrelay/api';
import {
  KUBERNETES_CLUSTER_API,
  isRetryableKubeError,
  kubeErrorCode,
  kubeFailure,
  type KubernetesClusterObject,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';

export interface ConditionWriterOptions {
  readonly apis: KubernetesRegistryApis;
  readonly namespace: string;
  readonly now: () => Date;
  readonly logger: Logger;
  /** The informer's copy of a CR (a starting point; a 409 makes the writer read afresh). */
  readonly cached: (name: string) => KubernetesClusterObject | undefined;
  /** Told about every CR the API returned after a successful write. */
  readonly observed: (obj: KubernetesClusterObject) => void;
  /** How long one write keeps retrying transient failures (default 10 s). */
  readonly retryBudgetMs?: number;
}

export interface ConditionWriteOptions {
  /** Write only when the CR has no condition of this type yet. */
  readonly onlyIfAbsent: boolean;
}

type RawCondition = Record<string, unknown>;

/**
 * The CR with `condition` set, or undefined when nothing needs writing: the condition already
 * says the same (status and reason), `onlyIfAbsent` and one exists, or it would turn a
 * ClusterWarm=True back to False (warmness is final).
 */
export function withCondition(
  obj: KubernetesClusterObject,
  condition: Omit<ClusterCondition, 'lastTransitionTime'>,
  options: ConditionWriteOptions,
  now: Date,
): KubernetesClusterObject | undefined {
  const raw = Array.isArray(obj.status?.conditions) ? (obj.status.conditions as RawCondition[]) : [];
  const old = raw.find((c) => c.type === condition.type);
  if (old && options.onlyIfAbsent) return undefined;
  if (old && old.status === condition.status && old.reason === condition.reason) return undefined;
  if (condition.type === CLUSTER_WARM_CONDITION && old?.status === 'True' && condition.status !== 'True')
    return undefined;
  const lastTransitionTime =
    old?.status === condition.status && old.lastTransitionTime
      ? old.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    ...obj,
    status: {
      ...obj.status,
      conditions: [...raw.filter((c) => c.type !== condition.type), { ...condition, lastTransitionTime }],
    },
  };
}

/** Serialises nothing, but collapses identical concurrent writes into one. */
export class KubernetesConditionWriter {
  readonly #opts: ConditionWriterOptions;
  readonly #inflight = new Map<string, Promise<void>>();

  constructor(options: ConditionWriterOptions) {
    this.#opts = options;
  }

  /**
   * Resolves once the condition is stored (or needs no write, or the CR is gone). Retries 409
   * by re-reading, and transient failures with backoff for retryBudgetMs; then throws
   * MESHRELAY_ERR_UNAVAILABLE.
   */
  write(
    name: string,
    condition: Omit<ClusterCondition, 'lastTransitionTime'>,
    options: ConditionWriteOptions,
  ): Promise<void> {
    const key = [name, condition.type, condition.status, condition.reason, options.onlyIfAbsent].join('\u0000');
    const running = this.#inflight.get(key);
    if (running) return running;
    const promise = this.#write(name, condition, options).finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, promise);
    return promise;
  }

  /** Waits for every write in flight to settle. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inflight.values()]);
  }

  async #write(
    name: string,
    condition: Omit<ClusterCondition, 'lastTransitionTime'>,
    options: ConditionWriteOptions,
  ): Promise<void> {
    const { apis, namespace } = this.#opts;
    const deadline = Date.now() + (this.#opts.retryBudgetMs ?? 10_000);
    let obj = this.#opts.cached(name);
    for (let attempt = 0; ; attempt++) {
      try {
        obj ??= (await apis.custom.getNamespacedCustomObject({
          ...KUBERNETES_CLUSTER_API,
          namespace,
          name,
        })) as KubernetesClusterObject;
        const next = withCondition(obj, condition, options, this.#opts.now());
        if (!next) return;
        const written = await apis.custom.replaceNamespacedCustomObjectStatus({
          ...KUBERNETES_CLUSTER_API,
          namespace,
          name,
          body: next,
        });
        this.#opts.observed(written as KubernetesClusterObject);
        return;
      } catch (err) {
        const code = kubeErrorCode(err);
        if (code === 404) return;
        const retry = code === 409 || isRetryableKubeError(err);
        if (!retry || Date.now() > deadline)
          throw kubeFailure(err, `write ${condition.type} condition of KubernetesCluster ${namespace}/${name}`);
        obj = undefined;
        if (code !== 409) await delay(Math.round(Math.random() * Math.min(2000, 100 * 2 ** attempt)));
        this.#opts.logger.debug({ cluster: name, code, attempt }, 'condition write retried');
      }
    }
  }
}
