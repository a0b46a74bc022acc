import { randomUUID } from 'node:crypto';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  buildInputSnapshot,
  MeshrelayError,
  resourceId,
  type BackoffOptions,
  type InputSnapshot,
  type Resource,
  type ResourceKey,
} from '@meshrelay/api';
import type { DiscoveryProvider } from './discovery-provider.ts';
import { compareInputProblems, logNewInputProblems, type InputProblem } from './input-problem.ts';
import { toInputResource, type InputConversion, type ResourceValidator } from './input-resource.ts';
import { KindWatch } from './kube-kind-watch.ts';
import { MeshConfigTracker } from './mesh-config.ts';
import { MESH_CONFIG_KIND, WATCHED_KINDS, collectionPath, objectPath, type KubeKind } from '../kube/kube-kinds.ts';
import { KubeHttpClient } from '../kube/kube-http.ts';

export interface KubernetesProviderOptions {
  readonly cluster: string;
  readonly kubeConfig: KubeConfig;
  readonly validate: ResourceValidator;
  readonly logger: Logger;
  /** Namespaces to watch; empty or undefined = all. Nodes are cluster-scoped and always watched. */
  readonly namespaces?: readonly string[];
  /**
   * Where Istio's mesh config ConfigMap `istio` is, for the trust domain (default istio-system; watched whatever
   * `namespaces` says).
   */
  readonly istioNamespace?: string;
  /** Quiet time after the last change before a new snapshot is built (default 100 ms). */
  readonly debounceMs?: number;
  /**
   * How long start() waits for every kind's first list (default 120 s, like controller-runtime's cache sync timeout).
   */
  readonly syncTimeoutMs?: number;
  /** Retry pacing after list/watch errors. */
  readonly backoff?: BackoffOptions;
  /** How often a kind the API server does not serve is listed again (default 30 s). */
  readonly missingKindRetryMs?: number;
  /** Random per process start unless given. */
  readonly epoch?: string;
}

/**
 * The `kubernetes` discovery provider: informers (list + watch) on Services,
 * EndpointSlices, Pods, Nodes and the Gloo kinds, and on the ConfigMaps of the
 * Istio namespace for the trust domain (mesh-config.ts), become the cluster's input
 * snapshot. Every object goes through the same conversion as a manifest
 * document (toInputResource), so the same objects give the same snapshot hash
 * as the file provider. A snapshot is built only once every kind has been
 * listed (or is known not to be served), so an incomplete view is never
 * published; a kind whose watch fails keeps its last-seen objects while it is
 * retried. Changes are debounced; identical content never makes a new generation.
 */
export class KubernetesDiscoveryProvider implements DiscoveryProvider {
  readonly #opts: KubernetesProviderOptions;
  readonly #epoch: string;
  readonly #listeners = new Set<(snapshot: InputSnapshot) => void>();
  readonly #conversions = new WeakMap<KubernetesObject, InputConversion>();
  #watches: KindWatch[] = [];
  #meshConfigWatch: KindWatch | undefined;
  #meshConfig: MeshConfigTracker | undefined;
  #trustDomain: string | undefined;
  #current: InputSnapshot | undefined;
  #problems: readonly InputProblem[] = [];
  #debounceTimer: NodeJS.Timeout | undefined;
  #firstPendingChange = 0;
  #synced: (() => void) | undefined;
  #abortStart: (() => void) | undefined;
  #stopped = false;

  constructor(options: KubernetesProviderOptions) {
    this.#opts = options;
    this.#epoch = options.epoch ?? randomUUID();
  }

  get epoch(): string {
    return this.#epoch;
  }

  get current(): InputSnapshot | undefined {
    return this.#current;
  }

  get problems(): readonly InputProblem[] {
    return this.#problems;
  }

  /**
   * The trust domain Istio's mesh config sets (the last good one while it is malformed); undefined = Istio's default.
   */
  get trustDomain(): string | undefined {
    return this.#trustDomain;
  }

  onSnapshot(listener: (snapshot: InputSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Starts every informer and resolves once each kind has been listed (or found
   * not served), with `current` set. Throws MESHRELAY_ERR_UNAVAILABLE, naming
   * each kind still unlisted and its last error, when that takes longer than
   * the sync timeout (everything started is stopped again) or when stop() is
   * called meanwhile.
   */
  async start(): Promise<void> {
    if (this.#watches.length > 0) return;
    if (this.#stopped) throw new MeshrelayError('MESHRELAY_ERR_UNAVAILABLE', 'the kubernetes provider was stopped');
    const http = new KubeHttpClient(this.#opts.kubeConfig);
    const watchOf = (kind: KubeKind, namespace: string | undefined): KindWatch =>
      new KindWatch({
        kubeConfig: this.#opts.kubeConfig,
        http,
        kind,
        ...(namespace !== undefined ? { namespace } : {}),
        logger: this.#opts.logger,
        ...(this.#opts.backoff ? { backoff: this.#opts.backoff } : {}),
        ...(this.#opts.missingKindRetryMs !== undefined ? { missingRetryMs: this.#opts.missingKindRetryMs } : {}),
        onChange: () => this.#changed(),
      });
    const istioNamespace = this.#opts.istioNamespace ?? 'istio-system';
    this.#meshConfigWatch = watchOf(MESH_CONFIG_KIND, istioNamespace);
    this.#meshConfig = new MeshConfigTracker(
      istioNamespace,
      `${collectionPath(MESH_CONFIG_KIND, istioNamespace)}/istio`,
    );
    this.#watches = [
      ...watchTargets(this.#opts.namespaces).map(({ kind, namespace }) => watchOf(kind, namespace)),
      this.#meshConfigWatch,
    ];
    const timeoutMs = this.#opts.syncTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await new Promise<'synced' | 'stopped' | 'timeout'>((resolve) => {
      this.#synced = () => resolve('synced');
      this.#abortStart = () => resolve('stopped');
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
      for (const watch of this.#watches) watch.start();
      this.#changed();
    });
    clearTimeout(timer);
    this.#synced = undefined;
    this.#abortStart = undefined;
    if (outcome === 'stopped')
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        'the kubernetes provider was stopped before every kind was listed',
      );
    if (outcome === 'timeout') {
      const missing = this.#watches
        .filter((w) => !w.settled)
        .map((w) => `${w.path} (${w.lastError?.message ?? 'no answer'})`);
      await this.stop();
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `the Kubernetes API server did not list within ${timeoutMs} ms: ${missing.join('; ')}`,
      );
    }
    this.#build();
  }

  /**
   * Stops every informer; a start() still waiting for the first lists rejects. Idempotent; a stopped provider is not
   * restarted.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abortStart?.();
    clearTimeout(this.#debounceTimer);
    await Promise.all(this.#watches.map((w) => w.stop()));
  }

  /** Every change of any kind: debounced into one build; the first complete sync is reported at once. */
  #changed(): void {
    if (this.#stopped) return;
    if (this.#synced && this.#watches.every((w) => w.settled)) {
      const resolve = this.#synced;
      this.#synced = undefined;
      resolve();
      return;
    }
    if (this.#current === undefined) return;
    this.#requestBuild(this.#opts.debounceMs ?? 100);
  }

  /** Trailing debounce with a ceiling, so a cluster that never stops changing still publishes. */
  #requestBuild(debounceMs: number): void {
    const now = Date.now();
    if (this.#debounceTimer === undefined) this.#firstPendingChange = now;
    clearTimeout(this.#debounceTimer);
    const ceiling = this.#firstPendingChange + Math.max(10 * debounceMs, 1_000);
    this.#debounceTimer = setTimeout(
      () => {
        this.#debounceTimer = undefined;
        this.#build();
      },
      Math.max(0, Math.min(debounceMs, ceiling - now)),
    );
  }

  #build(): void {
    if (this.#stopped) return;
    const resources: Resource[] = [];
    const problems: InputProblem[] = [];
    const seen = new Set<string>();
    for (const watch of this.#watches) {
      const kindProblem = watch.problem();
      if (kindProblem) problems.push(kindProblem);
      if (watch === this.#meshConfigWatch) {
        const mesh = this.#readMeshConfig(watch);
        if (mesh.problem) problems.push(mesh.problem);
        if (mesh.resource) resources.push(mesh.resource);
        continue;
      }
      for (const obj of watch.objects()) {
        const conversion = this.#convert(obj, watch.kind);
        if ('problems' in conversion) {
          problems.push(...objectProblems(obj, watch.kind, conversion.problems));
          continue;
        }
        const key = resourceId(conversion.resource);
        if (!seen.has(key)) resources.push(conversion.resource);
        seen.add(key);
      }
    }
    this.#setProblems(problems.sort(compareInputProblems));
    this.#publishIfChanged(resources);
  }

  /** The mesh config's part of a snapshot; a change of trust domain is logged once. */
  #readMeshConfig(watch: KindWatch): { resource?: Resource; problem?: InputProblem } {
    const reading = (this.#meshConfig as MeshConfigTracker).read(watch.objects());
    if (reading.trustDomain !== this.#trustDomain) {
      this.#opts.logger.info(
        { cluster: this.#opts.cluster, trustDomain: reading.trustDomain ?? null },
        reading.trustDomain === undefined
          ? "Istio mesh config sets no trust domain: Istio's default applies"
          : "trust domain from Istio's mesh config",
      );
      this.#trustDomain = reading.trustDomain;
    }
    return {
      ...(reading.resource ? { resource: reading.resource } : {}),
      ...(reading.problem ? { problem: reading.problem } : {}),
    };
  }

  /**
   * Conversions are cached per API object (a changed object is a new object), so a rebuild re-validates only what
   * changed.
   */
  #convert(obj: KubernetesObject, kind: KubeKind): InputConversion {
    let conversion = this.#conversions.get(obj);
    if (!conversion) {
      // List items come without apiVersion/kind; the collection they came from says what they are.
      conversion = toInputResource(
        { ...obj, apiVersion: kind.ref.apiVersion, kind: kind.ref.kind },
        this.#opts.validate,
      );
      this.#conversions.set(obj, conversion);
    }
    return conversion;
  }

  #publishIfChanged(resources: readonly Resource[]): void {
    const generation = (this.#current?.generation ?? 0) + 1;
    const snapshot = buildInputSnapshot({ cluster: this.#opts.cluster, epoch: this.#epoch, generation, resources });
    if (snapshot.hash === this.#current?.hash) return;
    this.#current = snapshot;
    this.#opts.logger.info(
      {
        cluster: snapshot.cluster,
        generation,
        hash: snapshot.hash,
        resources: resources.length,
        problems: this.#problems.length,
      },
      'input snapshot built',
    );
    for (const listener of this.#listeners) listener(snapshot);
  }

  #setProblems(problems: readonly InputProblem[]): void {
    logNewInputProblems(this.#opts.logger, this.#opts.cluster, this.#problems, problems);
    this.#problems = problems;
  }
}

/** One informer per kind and watched namespace; cluster-scoped kinds once. */
function watchTargets(namespaces: readonly string[] | undefined): Array<{ kind: KubeKind; namespace?: string }> {
  const scoped = [...new Set(namespaces ?? [])].sort();
  return WATCHED_KINDS.flatMap((kind) =>
    !kind.ref.namespaced || scoped.length === 0 ? [{ kind }] : scoped.map((namespace) => ({ kind, namespace })),
  );
}

/** A rejected object's problems, each naming its kind, namespace, name and field. */
function objectProblems(
  obj: KubernetesObject,
  kind: KubeKind,
  problems: readonly { path: string; message: string }[],
): InputProblem[] {
  const namespace = kind.ref.namespaced ? (obj.metadata?.namespace ?? '') : '';
  const name = obj.metadata?.name ?? '';
  const object: ResourceKey = { apiVersion: kind.ref.apiVersion, kind: kind.ref.kind, namespace, name };
  return problems.map((p) => ({
    file: objectPath(kind, namespace, name),
    document: -1,
    path: p.path,
    message: p.message,
    object,
  }));
}
