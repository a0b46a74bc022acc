// A namespaced custom resource kind kept in memory from the Kubernetes API (list + watch), for
// the management plane's own resources besides KubernetesClusters (Workspaces,
// RootTrustPolicies). The informer resumes from its last resourceVersion after a dropped watch
// and lists again after 410 Expired; any other failure restarts it after an exponential backoff
// with full jitter. After every list and every event the whole current set is handed to the
// consumer, so an object deleted while the watch was down disappears at the next list.
//
// A kind the API server does not serve (404: its CRD is not installed) is an empty set, not a
// failure: no such object can exist. It is listed again on the backoff (up to retryMaxMs), so a
// CRD installed later is picked up without a restart.

import type {
  Informer,
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  ObjectCache,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { kubeClient } from './kube-client.ts';
import { isRetryableKubeError, kubeErrorCode, kubeFailure, registryApis } from './kubernetes-objects.ts';

/** Where the API serves a kind: `/apis/<group>/<version>/namespaces/<ns>/<plural>`. */
export interface WatchedResourceKind {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
}

export interface KubernetesResourceWatchOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly kind: WatchedResourceKind;
  readonly logger: Logger;
  /** First delay of the restart backoff (default 500 ms), doubling up to retryMaxMs (default 30 s). */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /** How long start() waits for the first answered list (default 60 s). */
  readonly initialSyncTimeoutMs?: number;
}

/** What a list or an event leaves in memory: every object of the kind, and whether the kind is served. */
export interface WatchedObjects {
  readonly objects: readonly KubernetesObject[];
  readonly served: boolean;
}

/**
 * Starts the watch; resolves once a first list was answered (objects, or 404 = none), having
 * called `onObjects` with it. Throws MESHRELAY_ERR_UNAVAILABLE (or PERMISSION_DENIED) when no
 * list was answered within initialSyncTimeoutMs: a replica must not start as if a kind were
 * empty when it could not read it. `onObjects` must not throw.
 */
export async function startKubernetesResourceWatch(
  options: KubernetesResourceWatchOptions,
  onObjects: (current: WatchedObjects) => void,
): Promise<KubernetesResourceWatch> {
  const watch = new KubernetesResourceWatch(options, onObjects);
  await watch.init();
  return watch;
}

export class KubernetesResourceWatch {
  readonly #opts: KubernetesResourceWatchOptions;
  readonly #onObjects: (current: WatchedObjects) => void;
  readonly #informer: Informer<KubernetesObject> & ObjectCache<KubernetesObject>;
  #served = true;
  #restartTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #lastError: unknown;
  #closed = false;
  #synced: (() => void) | undefined;
  #reportPending = false;

  constructor(options: KubernetesResourceWatchOptions, onObjects: (current: WatchedObjects) => void) {
    this.#opts = options;
    this.#onObjects = onObjects;
    const { namespace, kind } = options;
    const custom = registryApis(options.kubeConfig).custom;
    const path = `/apis/${kind.group}/${kind.version}/namespaces/${namespace}/${kind.plural}`;
    this.#informer = kubeClient().makeInformer<KubernetesObject>(options.kubeConfig, path, async () => {
      let list: KubernetesListObject<KubernetesObject>;
      try {
        // CustomObjectsApi returns the list untyped.
        list = (await custom.listNamespacedCustomObject({
          group: kind.group,
          version: kind.version,
          plural: kind.plural,
          namespace,
        })) as KubernetesListObject<KubernetesObject>;
      } catch (err) {
        if (kubeErrorCode(err) !== 404) throw err;
        this.#notServed();
        // Failing the list restarts the informer on the backoff, which lists again later.
        throw err;
      }
      this.#served = true;
      this.#failures = 0;
      // The informer applies a list after this promise settles; report the set once it has.
      this.#scheduleReport();
      return list;
    });
    for (const event of ['add', 'update', 'delete'] as const) this.#informer.on(event, () => this.#scheduleReport());
    this.#informer.on('error', (err) => this.#scheduleRestart(err));
  }

  /** Whether the API server served the kind at the last list. */
  get served(): boolean {
    return this.#served;
  }

  async init(): Promise<void> {
    const synced = new Promise<void>((resolve) => {
      this.#synced = resolve;
    });
    await this.#informer.start().catch((err: unknown) => this.#scheduleRestart(err));
    const timeoutMs = this.#opts.initialSyncTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([synced, timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      await this.close();
      throw kubeFailure(
        this.#lastError ?? new Error('no answer'),
        `list ${this.#opts.kind.kind}s in ${this.#opts.namespace} (gave up after ${timeoutMs} ms)`,
      );
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    await this.#informer.stop();
  }

  #notServed(): void {
    if (this.#served) {
      this.#opts.logger.info(
        { kind: this.#opts.kind.kind, namespace: this.#opts.namespace },
        `the API server does not serve ${this.#opts.kind.kind} (no CRD): none exist; listing again later`,
      );
    }
    this.#served = false;
    if (this.#closed) return;
    this.#onObjects({ objects: [], served: false });
    this.#synced?.();
  }

  /**
   * One report per turn of the event loop: a list applies its items one event at a time, and a
   * consumer must not see the set half applied (a Workspace missing from it would be dropped).
   */
  #scheduleReport(): void {
    if (this.#reportPending) return;
    this.#reportPending = true;
    setImmediate(() => {
      this.#reportPending = false;
      this.#report();
    });
  }

  #report(): void {
    if (this.#closed) return;
    this.#onObjects({ objects: this.#informer.list(this.#opts.namespace), served: true });
    this.#synced?.();
  }

  #scheduleRestart(err: unknown): void {
    if (this.#closed) return;
    this.#lastError = err;
    clearTimeout(this.#restartTimer);
    const base = this.#opts.retryBaseMs ?? 500;
    const cap = Math.min(this.#opts.retryMaxMs ?? 30_000, base * 2 ** Math.min(this.#failures, 16));
    const delay = Math.round(Math.random() * cap);
    this.#failures++;
    // A kind that is not served is expected (no CRD installed): no warning for each retry.
    if (this.#served) {
      this.#opts.logger.warn(
        { err, kind: this.#opts.kind.kind, retryInMs: delay, retryable: isRetryableKubeError(err) },
        `${this.#opts.kind.kind} watch failed; restarting`,
      );
    }
    this.#restartTimer = setTimeout(() => {
      if (this.#closed) return;
      this.#informer.start().catch((e: unknown) => this.#scheduleRestart(e));
    }, delay);
  }
}
