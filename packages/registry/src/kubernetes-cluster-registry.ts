// ClusterRegistry kept in the Kubernetes API (the `kubernetes` registry backend, DESIGN §5):
// KubernetesCluster CRs in the management namespace are the records, `relay-token-<cluster>`
// Secrets hold the token hashes (see kubernetes-objects.ts), and every replica keeps the CRs in
// memory from an informer (list + watch). The informer resumes from its last resourceVersion
// after a dropped watch and relists after 410 Expired; after any other API failure it is
// restarted with exponential backoff and full jitter, and every relist is reconciled against
// memory (so a CR deleted while the watch was down is reported as deregistered). Edits by anyone
// (other replicas, kubectl, meshctl) reach the listeners: spec.skipWarming changes are `updated`,
// deleted CRs `deregistered`.
//
// Status writes — idempotent, conflict-safe writes. `status.conditions` is written only through
// the status subresource, with a resourceVersion-guarded replace; on 409 the writer re-reads and
// stops if the condition already says what it wanted. ClusterWarm=True is final: a write never
// turns it back to False. Every replica may therefore record ClusterWarm=True for the snapshots
// it receives: whichever replica holds the agent's stream is the one that knows, and leaving
// that write to a leader would need a second channel from followers to the leader for no gain.
// The elected replica (`statusWriter`, a Lease-based LeaderElector in the server) does the one
// housekeeping write nobody asks for: ClusterWarm=False/ClusterRegistered on CRs created
// outside the server (kubectl, meshctl), so N replicas do not race for it.

import type { Informer, KubeConfig, KubernetesListObject, ObjectCache } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CLUSTER_WARM_CONDITION, MeshrelayError, type ClusterCondition, type KubernetesCluster } from '@meshrelay/api';
import type {
  ClusterRegistry,
  ClusterUpdate,
  RegisterOptions,
  RegistrationResult,
  RegistryChange,
  RevocationResult,
} from './cluster-registry.ts';
import { ClusterCache } from './cluster-cache.ts';
import { assertClusterSpec } from './cluster-spec.ts';
import { kubeClient } from './kube-client.ts';
import { KubernetesConditionWriter } from './kubernetes-condition-writer.ts';
import {
  KUBERNETES_CLUSTER_API,
  clusterFromObject,
  createClusterWithToken,
  isRetryableKubeError,
  kubeErrorCode,
  kubeFailure,
  readTokenRecord,
  registryApis,
  tokenSecretName,
  type KubernetesClusterObject,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';
import { revokeClusterInKubernetes } from './kubernetes-revocation.ts';
import { changeClusterSpec } from './kubernetes-spec-change.ts';
import { KubernetesTokenRotation } from './kubernetes-token-rotation.ts';
import { tokenMatches } from './tokens.ts';

/** The part of a LeaderElector the registry needs. */
export interface StatusWriterElection {
  isLeader(): boolean;
  onChange(listener: (leader: boolean) => void): () => void;
}

export interface KubernetesRegistryOptions {
  readonly kubeConfig: KubeConfig;
  /** The management namespace (default gloo-mesh in the server's config). */
  readonly namespace: string;
  readonly tokenTtlSeconds: number;
  readonly tokenOverlapSeconds: number;
  readonly logger: Logger;
  /** Who initialises status of CRs created elsewhere; default: this replica alone. */
  readonly statusWriter?: StatusWriterElection;
  readonly now?: () => Date;
  /** First delay of the informer restart backoff (default 500 ms), doubling up to retryMaxMs (default 30 s). */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /** How long creation waits for the first successful list before failing (default 60 s). */
  readonly initialSyncTimeoutMs?: number;
}

const REGISTERED_CONDITION: Omit<ClusterCondition, 'lastTransitionTime'> = {
  type: CLUSTER_WARM_CONDITION,
  status: 'False',
  reason: 'ClusterRegistered',
  message: 'no input snapshot received yet',
};

/**
 * Starts the informer and resolves once the first list is in memory. Throws
 * MESHRELAY_ERR_UNAVAILABLE when no list succeeded within initialSyncTimeoutMs: a replica must
 * not start with an empty registry, since the safe-mode gate would see no warm clusters.
 */
export async function createKubernetesClusterRegistry(options: KubernetesRegistryOptions): Promise<ClusterRegistry> {
  const registry = new KubernetesClusterRegistry(options);
  await registry.init();
  return registry;
}

class KubernetesClusterRegistry implements ClusterRegistry {
  readonly #opts: KubernetesRegistryOptions;
  readonly #apis: KubernetesRegistryApis;
  readonly #now: () => Date;
  readonly #informer: Informer<KubernetesClusterObject> & ObjectCache<KubernetesClusterObject>;
  readonly #conditions: KubernetesConditionWriter;
  readonly #rotation: KubernetesTokenRotation;
  readonly #cache = new ClusterCache();
  #unsubscribeElection: (() => void) | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #lastError: unknown;
  #closed = false;
  #synced: (() => void) | undefined;

  constructor(options: KubernetesRegistryOptions) {
    this.#opts = options;
    this.#apis = registryApis(options.kubeConfig);
    this.#now = options.now ?? (() => new Date());
    const { namespace } = options;
    this.#conditions = new KubernetesConditionWriter({
      apis: this.#apis,
      namespace,
      now: this.#now,
      logger: options.logger,
      cached: (name) => this.#informer.get(name, namespace),
      observed: (obj) => this.#observe(obj),
    });
    this.#rotation = new KubernetesTokenRotation(this.#apis, namespace, options);
    const path = `/apis/${KUBERNETES_CLUSTER_API.group}/${KUBERNETES_CLUSTER_API.version}/namespaces/${namespace}/${KUBERNETES_CLUSTER_API.plural}`;
    this.#informer = kubeClient().makeInformer<KubernetesClusterObject>(options.kubeConfig, path, async () => {
      // CustomObjectsApi returns the list untyped.
      const list = (await this.#apis.custom.listNamespacedCustomObject({
        ...KUBERNETES_CLUSTER_API,
        namespace,
      })) as KubernetesListObject<KubernetesClusterObject>;
      // The informer applies a list after this promise settles; reconcile once it has.
      setImmediate(() => this.#reconcile());
      return list;
    });
    this.#informer.on('add', (obj) => this.#observe(obj));
    this.#informer.on('update', (obj) => this.#observe(obj));
    this.#informer.on('delete', (obj) => this.#cache.apply(obj.metadata?.name ?? '', undefined));
    this.#informer.on('error', (err) => this.#scheduleRestart(err));
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
        `list KubernetesClusters in ${this.#opts.namespace} (gave up after ${timeoutMs} ms)`,
      );
    }
    const election = this.#opts.statusWriter;
    this.#unsubscribeElection = election?.onChange((leader) => {
      if (leader) this.#initializeStatuses();
    });
    this.#initializeStatuses();
  }

  list(): readonly KubernetesCluster[] {
    return this.#cache.list();
  }

  get(name: string): KubernetesCluster | undefined {
    return this.#cache.get(name);
  }

  async register(name: string, options: RegisterOptions): Promise<RegistrationResult> {
    if (this.#cache.has(name))
      throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_EXISTS', `cluster "${name}" is already registered`);
    const created = await createClusterWithToken(this.#apis, name, {
      ...options,
      namespace: this.#opts.namespace,
      tokenTtlSeconds: this.#opts.tokenTtlSeconds,
      now: this.#now(),
    });
    this.#observe(created.object);
    // The creator initialises the condition itself; if that fails the elected replica does it later.
    await this.#conditions
      .write(name, REGISTERED_CONDITION, { onlyIfAbsent: true })
      .catch((err: unknown) =>
        this.#opts.logger.warn({ err, cluster: name }, 'could not initialise the ClusterWarm condition'),
      );
    const cluster = this.#cache.get(name);
    if (!cluster)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        `cluster "${name}" was created but is not a valid KubernetesCluster`,
      );
    return { cluster, token: created.issued.token, tokenExpiresAt: created.issued.expiresAt };
  }

  async deregister(name: string): Promise<void> {
    this.#require(name);
    const { namespace } = this.#opts;
    try {
      await this.#apis.custom.deleteNamespacedCustomObject({ ...KUBERNETES_CLUSTER_API, namespace, name });
    } catch (err) {
      if (kubeErrorCode(err) !== 404) throw kubeFailure(err, `delete KubernetesCluster ${namespace}/${name}`);
    }
    // The garbage collector removes the owned Secret too, but asynchronously: do not leave it to it.
    await this.#apis.core.deleteNamespacedSecret({ name: tokenSecretName(name), namespace }).catch((err: unknown) => {
      if (kubeErrorCode(err) !== 404)
        this.#opts.logger.warn({ err, cluster: name }, 'could not delete the token Secret; the garbage collector will');
    });
    this.#cache.apply(name, undefined);
  }

  async rotateToken(name: string): Promise<RegistrationResult> {
    const cluster = this.#require(name);
    const issued = await this.#rotation.rotate({ name, uid: cluster.metadata.uid }, this.#now());
    return { cluster, token: issued.token, tokenExpiresAt: issued.expiresAt };
  }

  async revoke(name: string): Promise<RevocationResult> {
    const cluster = this.#require(name);
    const revoked = await revokeClusterInKubernetes(
      this.#apis,
      this.#opts.namespace,
      { name, uid: cluster.metadata.uid },
      {
        now: this.#now(),
        tokenTtlSeconds: this.#opts.tokenTtlSeconds,
      },
    );
    this.#observe(revoked.object);
    return {
      cluster: this.#require(name),
      token: revoked.issued.token,
      tokenExpiresAt: revoked.issued.expiresAt,
      revokedBefore: revoked.revokedBefore,
    };
  }

  async verifyToken(name: string, token: string): Promise<KubernetesCluster> {
    const refused = new MeshrelayError(
      'MESHRELAY_ERR_TOKEN_INVALID',
      `relay identity token refused for cluster "${name}": unknown cluster, wrong token or expired token`,
    );
    const cluster = this.#cache.get(name);
    const record = cluster
      ? await readTokenRecord(this.#apis, this.#opts.namespace, { name, uid: cluster.metadata.uid })
      : undefined;
    if (!cluster || !record || !tokenMatches(record, token, this.#now())) throw refused;
    return cluster;
  }

  async update(name: string, update: ClusterUpdate): Promise<KubernetesCluster> {
    const { metadata } = this.#require(name);
    const fields = Object.fromEntries(Object.entries(update).filter(([, v]) => v !== undefined));
    assertClusterSpec(fields);
    const written = await changeClusterSpec(this.#apis, this.#opts.namespace, { name, uid: metadata.uid }, (spec) => ({
      ...spec,
      ...fields,
    }));
    this.#observe(written);
    return this.#require(name);
  }

  async setCondition(name: string, condition: Omit<ClusterCondition, 'lastTransitionTime'>): Promise<void> {
    const cluster = this.#cache.get(name);
    if (!cluster) return;
    const old = cluster.status?.conditions?.find((c) => c.type === condition.type);
    if (old && old.status === condition.status && old.reason === condition.reason) return;
    await this.#conditions.write(name, condition, { onlyIfAbsent: false });
  }

  onChange(listener: (change: RegistryChange) => void): () => void {
    return this.#cache.onChange(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    this.#unsubscribeElection?.();
    await this.#informer.stop();
    await this.#conditions.drain();
  }

  #require(name: string): KubernetesCluster {
    const cluster = this.#cache.get(name);
    if (!cluster) throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${name}" is not registered`);
    return cluster;
  }

  #observe(obj: KubernetesClusterObject): void {
    this.#failures = 0;
    const name = obj.metadata?.name ?? '';
    const parsed = clusterFromObject(obj);
    if ('problem' in parsed) {
      this.#opts.logger.error(
        { cluster: name, problem: parsed.problem },
        'KubernetesCluster is invalid; keeping the previous copy',
      );
      return;
    }
    this.#cache.apply(name, parsed.cluster);
    if (this.#statusWriter() && !parsed.cluster.status?.conditions?.some((c) => c.type === CLUSTER_WARM_CONDITION)) {
      this.#initializeStatus(name);
    }
  }

  /** Memory ← the informer's cache after a (re)list: also drops CRs deleted while the watch was down. */
  #reconcile(): void {
    if (this.#closed) return;
    const present = new Set<string>();
    for (const obj of this.#informer.list(this.#opts.namespace)) {
      present.add(obj.metadata?.name ?? '');
      this.#observe(obj);
    }
    for (const name of this.#cache.names()) if (!present.has(name)) this.#cache.apply(name, undefined);
    this.#synced?.();
  }

  #statusWriter(): boolean {
    return this.#opts.statusWriter?.isLeader() ?? true;
  }

  #initializeStatuses(): void {
    if (!this.#statusWriter()) return;
    for (const cluster of this.#cache.list()) {
      if (!cluster.status?.conditions?.some((c) => c.type === CLUSTER_WARM_CONDITION))
        this.#initializeStatus(cluster.metadata.name);
    }
  }

  #initializeStatus(name: string): void {
    this.#conditions
      .write(name, REGISTERED_CONDITION, { onlyIfAbsent: true })
      .catch((err: unknown) =>
        this.#opts.logger.warn({ err, cluster: name }, 'could not initialise the ClusterWarm condition'),
      );
  }

  #scheduleRestart(err: unknown): void {
    if (this.#closed) return;
    this.#lastError = err;
    clearTimeout(this.#restartTimer);
    const base = this.#opts.retryBaseMs ?? 500;
    const cap = Math.min(this.#opts.retryMaxMs ?? 30_000, base * 2 ** Math.min(this.#failures, 16));
    const delay = Math.round(Math.random() * cap);
    this.#failures++;
    this.#opts.logger.warn(
      { err, retryInMs: delay, retryable: isRetryableKubeError(err) },
      'KubernetesCluster watch failed; restarting',
    );
    this.#restartTimer = setTimeout(() => {
      if (this.#closed) return;
      this.#informer.start().catch((e: unknown) => this.#scheduleRestart(e));
    }, delay);
  }
}
