import type { Informer, KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Backoff, isRecord, type BackoffOptions } from '@meshrelay/api';
import type { InputProblem } from './input-problem.ts';
import { collectionPath, type KubeKind } from '../kube/kube-kinds.ts';
import { statusCodeOf, type KubeHttpClient } from '../kube/kube-http.ts';
import { kubeClient } from '../kube/kube-modules.ts';

/**
 * pending: never listed yet · synced: listed and watching · failing: listed
 * before, now retrying (the objects last seen are kept) · missing: the API
 * server does not serve the kind (404 on list: its CRD is not installed).
 */
export type KindWatchState = 'pending' | 'synced' | 'failing' | 'missing';

export interface KindWatchOptions {
  readonly kubeConfig: KubeConfig;
  readonly http: KubeHttpClient;
  readonly kind: KubeKind;
  /** Watch one namespace; undefined = all namespaces (always for a cluster-scoped kind). */
  readonly namespace?: string;
  readonly logger: Logger;
  /** Retry pacing after a list/watch error (full jitter). */
  readonly backoff?: BackoffOptions;
  /** How often a missing kind is listed again (default 30 s). */
  readonly missingRetryMs?: number;
  /** Items per list page (default 500). */
  readonly pageSize?: number;
  /** Called after anything that can change `objects()`, `state` or `problem()`. */
  readonly onChange: () => void;
}

type ObjectInformer = Informer<KubernetesObject>;

/** A list answer as JSON (client-node's typed V1ListMeta names `continue` differently). */
interface RawList {
  readonly metadata?: unknown;
  readonly items?: KubernetesObject[];
}

/**
 * Follows one kind (in one namespace or all) with a client-node informer
 * (list + watch from the listed resourceVersion). The informer relists on its
 * own after 410 Gone; every other error stops it, and this class restarts it
 * with backoff, resuming the watch from the last resourceVersion seen, so no
 * change is lost. Its own object map is replaced wholesale by every list (the
 * authoritative state) and updated by every watch event.
 */
export class KindWatch {
  readonly #opts: KindWatchOptions;
  readonly #path: string;
  readonly #backoff: Backoff;
  readonly #objects = new Map<string, KubernetesObject>();
  #informer: ObjectInformer | undefined;
  #state: KindWatchState = 'pending';
  #error: Error | undefined;
  #attemptFailed = false;
  #listFailed = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: KindWatchOptions) {
    this.#opts = options;
    this.#path = collectionPath(options.kind, options.namespace);
    this.#backoff = new Backoff({ baseMs: 250, capMs: 30_000, ...options.backoff });
  }

  get kind(): KubeKind {
    return this.#opts.kind;
  }

  /** The collection path followed, e.g. `/api/v1/namespaces/bookinfo/pods`. */
  get path(): string {
    return this.#path;
  }

  get state(): KindWatchState {
    return this.#state;
  }

  /** Listed at least once (synced or failing) or known missing: this kind's part of a snapshot is known. */
  get settled(): boolean {
    return this.#state === 'synced' || this.#state === 'missing' || this.#state === 'failing';
  }

  /** The latest error, while the kind is not synced. */
  get lastError(): Error | undefined {
    return this.#error;
  }

  /** The objects currently known (raw API objects; list items may lack apiVersion/kind). Empty when missing. */
  objects(): IterableIterator<KubernetesObject> {
    return this.#objects.values();
  }

  /** Why this kind is not (fully) in the snapshot, or undefined when it is synced. */
  problem(): InputProblem | undefined {
    const { ref } = this.#opts.kind;
    const what = `${ref.kind} (${ref.apiVersion})`;
    if (this.#state === 'missing') {
      return {
        file: this.#path,
        document: -1,
        path: '',
        message: `${what} is not served by the API server (404 on list; is its CRD installed?): skipped, listed again every ${Math.round((this.#opts.missingRetryMs ?? 30_000) / 1000)} s`,
      };
    }
    if (this.#error === undefined || this.#state === 'synced') return undefined;
    const kept = this.#state === 'failing' ? '; the objects last seen are kept' : '';
    return {
      file: this.#path,
      document: -1,
      path: '',
      message: `cannot list/watch ${what}: ${this.#error.message}; retrying${kept}`,
    };
  }

  /** Starts listing and watching; progress is reported through onChange. */
  start(): void {
    this.#launch(true);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    const informer = this.#informer;
    this.#informer = undefined;
    await informer?.stop();
  }

  #launch(fresh: boolean): void {
    if (this.#stopped) return;
    let informer = this.#informer;
    if (fresh || !informer) {
      const old = informer;
      informer = this.#makeInformer();
      this.#informer = informer;
      void old?.stop();
    }
    void this.#attempt(informer);
  }

  #makeInformer(): ObjectInformer {
    const informer: ObjectInformer = kubeClient().makeInformer(this.#opts.kubeConfig, this.#path, () =>
      this.#list(informer),
    );
    const changed = (phase: 'set' | 'delete') => (obj: KubernetesObject) => {
      if (informer !== this.#informer) return;
      if (phase === 'set') this.#objects.set(objectKey(obj), obj);
      else this.#objects.delete(objectKey(obj));
      this.#opts.onChange();
    };
    informer.on('add', changed('set'));
    informer.on('update', changed('set'));
    informer.on('delete', changed('delete'));
    informer.on('error', (err: unknown) => this.#onError(informer, err));
    return informer;
  }

  async #attempt(informer: ObjectInformer): Promise<void> {
    this.#attemptFailed = false;
    this.#listFailed = false;
    try {
      await informer.start();
    } catch (err) {
      // Thrown before any request went out (e.g. an unreadable token file).
      this.#onError(informer, err);
      return;
    }
    if (informer !== this.#informer || this.#stopped) {
      // Stopped while the watch request was being opened: client-node's stop() could not abort it then.
      await informer.stop();
      return;
    }
    if (this.#attemptFailed) return;
    const recovered = this.#state !== 'synced';
    this.#state = 'synced';
    this.#error = undefined;
    this.#backoff.reset();
    if (recovered)
      this.#opts.logger.info({ kind: this.#opts.kind.ref.kind, path: this.#path }, 'kind listed and watched');
    this.#opts.onChange();
  }

  /** The informer's list function: every page of the collection; the result replaces the object map. */
  async #list(informer: ObjectInformer): Promise<KubernetesListObject<KubernetesObject>> {
    try {
      const items: KubernetesObject[] = [];
      let resourceVersion: string | undefined;
      let cont: string | undefined;
      do {
        const page = await this.#opts.http.request<RawList>({
          method: 'GET',
          path: this.#path,
          query: { limit: this.#opts.pageSize ?? 500, continue: cont },
        });
        if (Array.isArray(page.items)) items.push(...page.items);
        const meta = isRecord(page.metadata) ? page.metadata : {};
        if (typeof meta['resourceVersion'] === 'string') resourceVersion ??= meta['resourceVersion'];
        cont = typeof meta['continue'] === 'string' ? meta['continue'] : undefined;
      } while (cont !== undefined && cont !== '');
      // client-node goes on to open a watch after a list even if stopped meanwhile; failing the list prevents that.
      if (informer !== this.#informer || this.#stopped) throw new Error('stopped');
      this.#objects.clear();
      for (const item of items) this.#objects.set(objectKey(item), item);
      return { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: resourceVersion ?? '' }, items };
    } catch (err) {
      if (informer === this.#informer) this.#listFailed = true;
      throw err;
    }
  }

  #onError(informer: ObjectInformer, err: unknown): void {
    if (informer !== this.#informer || this.#stopped) return;
    this.#attemptFailed = true;
    const error = err instanceof Error ? err : new Error(String(err));
    const status = statusCodeOf(err);
    const fields = { kind: this.#opts.kind.ref.kind, path: this.#path, status, err: error };
    let delay: number;
    let fresh = false;
    if (status === 404 && this.#listFailed) {
      // The kind is not served (CRD absent or deleted, and with it every object of the kind).
      if (this.#state !== 'missing') this.#opts.logger.warn(fields, 'kind not served by the API server; skipping it');
      this.#state = 'missing';
      this.#objects.clear();
      fresh = true;
      delay = this.#opts.missingRetryMs ?? 30_000;
    } else {
      // A 404 on the watch means the kind went away under it: list afresh to find out.
      fresh = status === 404;
      if (this.#state === 'synced') this.#state = 'failing';
      delay = this.#backoff.nextDelayMs();
      this.#opts.logger.warn({ ...fields, retryInMs: delay }, 'list/watch failed; retrying');
    }
    this.#error = error;
    this.#opts.onChange();
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => this.#launch(fresh), delay);
  }
}

function objectKey(obj: KubernetesObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}
