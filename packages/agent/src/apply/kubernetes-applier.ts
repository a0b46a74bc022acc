import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  Backoff,
  isRecord,
  MeshrelayError,
  OWNER_LABEL,
  OWNER_LABEL_VALUE,
  resourceId,
  type BackoffOptions,
  type Resource,
} from '@meshrelay/api';
import { APPLIED_KINDS, collectionPath, findAppliedKind, objectPath, type KubeKind } from '../kube/kube-kinds.ts';
import { KubeHttpClient, statusCodeOf } from '../kube/kube-http.ts';
import { AppliedOutputStore } from './applied-output-store.ts';
import type { OutputApplier } from './output-applier.ts';
import { checkAppliedOutput, type AppliedOutput } from './output-state.ts';
import { runLimited } from './run-limited.ts';

export const DEFAULT_FIELD_MANAGER = 'meshrelay-agent';

export interface KubernetesApplierOptions {
  readonly cluster: string;
  readonly kubeConfig: KubeConfig;
  /** Where the last applied output is persisted (shared with the file writer's format). */
  readonly stateDir: string;
  readonly logger: Logger;
  /** Server-side apply field manager (default `meshrelay-agent`). */
  readonly fieldManager?: string;
  /** Requests in flight at once (default 8). */
  readonly concurrency?: number;
  /**
   * Pacing of background re-applies of an output that failed (default 1 s doubling to 60 s, full jitter); false = no
   * retry.
   */
  readonly retry?: BackoffOptions | false;
  /** Per-request timeout (default 30 s). */
  readonly requestTimeoutMs?: number;
}

/** What one apply did; what the `output applied` log line reports. */
export interface ApplyReport {
  readonly applied: number;
  readonly pruned: readonly string[];
}

/** What this leadership term applied last: the content hash of each resource, by resource id. */
type AppliedDigests = ReadonlyMap<string, string>;

/**
 * The `kubernetes` applier: server-side applies every output resource
 * (`application/apply-patch+yaml`, one field manager, force) with the ownership
 * label, then prunes objects that carry the ownership label and are absent from
 * the output. Pruning happens only on positive evidence: after every resource
 * of the output was applied, from a successful list per kind, and only objects
 * whose own labels say they are ours (the label selector is not trusted alone).
 * A failed or partial apply prunes nothing, keeps the previous output held, and
 * is retried in the background until it succeeds or a newer output arrives.
 * The last applied output is persisted like the file writer's. Calls are serialized.
 *
 * A change costs what it changes: once an output was applied and pruned in full in this
 * leadership term, the next one applies only resources whose content (hash) differs from what
 * was applied, and lists for pruning only when the set of resources changed (with the same set,
 * nothing can have become stale since the last complete prune). The first apply of a term
 * (after start, restore() or stop()) is complete: another replica may have led in between, so
 * what this replica applied before proves nothing about the cluster now.
 */
export class KubernetesOutputApplier implements OutputApplier {
  readonly #opts: KubernetesApplierOptions;
  readonly #http: KubeHttpClient;
  readonly #fieldManager: string;
  readonly #retryBackoff: Backoff | undefined;
  readonly #store: AppliedOutputStore;
  #held: AppliedOutput | undefined;
  /** Set by a complete apply in this term; what the next apply is the difference to. */
  #applied: AppliedDigests | undefined;
  #desired: AppliedOutput | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: KubernetesApplierOptions) {
    this.#opts = options;
    this.#http = new KubeHttpClient(
      options.kubeConfig,
      options.requestTimeoutMs !== undefined ? { timeoutMs: options.requestTimeoutMs } : {},
    );
    this.#fieldManager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    this.#retryBackoff =
      options.retry === false ? undefined : new Backoff({ baseMs: 1_000, capMs: 60_000, ...options.retry });
    this.#store = new AppliedOutputStore(options.stateDir);
  }

  get heldHash(): string {
    return this.#held?.hash ?? '';
  }

  get held(): AppliedOutput | undefined {
    return this.#held;
  }

  /** Loads the persisted last applied output; sends nothing (the cluster still holds what was applied). */
  restore(): Promise<AppliedOutput | undefined> {
    return this.#serialize(async () => {
      const output = await this.#store.load(this.#opts.cluster, this.#opts.logger);
      this.#applied = undefined;
      if (output) {
        this.#held = output;
        this.#opts.logger.info(
          { cluster: output.cluster, hash: output.hash, resources: output.resources.length },
          'restored last applied output',
        );
      }
      return output;
    });
  }

  /**
   * Applies `output` and prunes what it no longer holds. Resolves false with no
   * API call when its hash is already held. Rejects with
   * MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH/INVALID_ARGUMENT for a bad output and
   * MESHRELAY_ERR_UNAVAILABLE naming every resource that failed; then nothing is
   * pruned and the output is retried in the background.
   */
  apply(output: AppliedOutput): Promise<boolean> {
    return this.#serialize(async () => {
      const checked = await checkAppliedOutput(output, this.#opts.cluster, this.#held);
      if (checked.hash === this.#held?.hash) {
        this.#desired = undefined;
        clearTimeout(this.#retryTimer);
        return false;
      }
      this.#desired = checked;
      clearTimeout(this.#retryTimer);
      return this.#applyDesired(checked);
    });
  }

  /**
   * Drops the pending retry and waits for an apply in progress; apply() may be called again afterwards (a new
   * leadership term).
   */
  async stop(): Promise<void> {
    this.#desired = undefined;
    clearTimeout(this.#retryTimer);
    await this.#queue;
    this.#applied = undefined;
  }

  #serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #applyDesired(output: AppliedOutput): Promise<boolean> {
    try {
      const digests = this.#store.digestsOf(output.resources);
      const report = await this.#applyAndPrune(output, digests);
      await this.#store.save(output, digests);
      this.#applied = new Map(output.resources.map((r, i) => [resourceId(r), digests[i] as string]));
      this.#held = output;
      this.#desired = undefined;
      this.#retryBackoff?.reset();
      this.#opts.logger.info(
        { cluster: output.cluster, hash: output.hash, applied: report.applied, pruned: report.pruned },
        'output server-side applied',
      );
      return true;
    } catch (err) {
      // Only the output still wanted is retried: a newer output or stop() replaced or dropped it.
      if (this.#desired === output) this.#scheduleRetry(output);
      throw err;
    }
  }

  #scheduleRetry(output: AppliedOutput): void {
    if (!this.#retryBackoff) return;
    const delay = this.#retryBackoff.nextDelayMs();
    this.#opts.logger.warn(
      { cluster: output.cluster, hash: output.hash, retryInMs: delay },
      'output not fully applied; retrying',
    );
    this.#retryTimer = setTimeout(() => {
      void this.#serialize(async () => {
        if (this.#desired !== output) return;
        await this.#applyDesired(output);
      }).catch((err: unknown) => this.#opts.logger.error({ err, hash: output.hash }, 'retry of the output failed'));
    }, delay);
  }

  /**
   * Applies what changed since this term's last complete apply (everything without one), then prunes if the set of
   * resources changed.
   */
  async #applyAndPrune(output: AppliedOutput, digests: readonly string[]): Promise<ApplyReport> {
    const applied = this.#applied;
    const ids = output.resources.map(resourceId);
    const changed = applied
      ? output.resources.filter((_, i) => applied.get(ids[i] as string) !== digests[i])
      : output.resources;
    const failures: string[] = [];
    await runLimited(changed, this.#opts.concurrency ?? 8, async (resource) => {
      try {
        await this.#applyOne(resource);
      } catch (err) {
        failures.push(`${resourceId(resource)}: ${(err as Error).message}`);
      }
    });
    if (failures.length > 0) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `${failures.length} of ${changed.length} changed output resources could not be applied; nothing was pruned: ${summarize(failures)}`,
      );
    }
    const sameSet = applied !== undefined && applied.size === ids.length && ids.every((id) => applied.has(id));
    const pruned = sameSet ? [] : await this.#prune(output);
    return { applied: changed.length, pruned };
  }

  async #applyOne(resource: Resource): Promise<void> {
    const kind = findAppliedKind(resource.apiVersion, resource.kind);
    if (!kind)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_RESOURCE',
        `${resource.kind} (${resource.apiVersion}) is not a kind this agent applies`,
      );
    const namespace = resource.metadata.namespace ?? '';
    if (kind.ref.namespaced && namespace === '')
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_RESOURCE', 'metadata.namespace is required');
    await this.#http.request({
      method: 'PATCH',
      path: objectPath(kind, namespace, resource.metadata.name),
      query: { fieldManager: this.#fieldManager, force: true },
      contentType: 'application/apply-patch+yaml',
      body: withOwnerLabel(resource),
    });
  }

  /** Deletes owned objects absent from `output`; throws (after trying every kind) if any list or delete failed. */
  async #prune(output: AppliedOutput): Promise<string[]> {
    const keep = new Set(output.resources.map(resourceId));
    const failures: string[] = [];
    const pruned: string[] = [];
    for (const kind of APPLIED_KINDS) {
      let owned: OwnedObject[];
      try {
        owned = await this.#listOwned(kind);
      } catch (err) {
        failures.push(`list ${collectionPath(kind)}: ${(err as Error).message}`);
        continue;
      }
      const stale = owned.filter((o) => !keep.has(o.id));
      await runLimited(stale, this.#opts.concurrency ?? 8, async (o) => {
        try {
          if (await this.#deleteOwned(kind, o)) pruned.push(o.id);
        } catch (err) {
          failures.push(`delete ${o.id}: ${(err as Error).message}`);
        }
      });
    }
    if (failures.length > 0) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `the output was applied but pruning failed: ${summarize(failures)}`,
      );
    }
    return pruned.sort();
  }

  /** Objects of `kind` carrying the ownership label; a kind the server does not serve has none. */
  async #listOwned(kind: KubeKind): Promise<OwnedObject[]> {
    const owned: OwnedObject[] = [];
    let cont: string | undefined;
    do {
      let page: { metadata?: unknown; items?: unknown[] };
      try {
        page = await this.#http.request({
          method: 'GET',
          path: collectionPath(kind),
          query: { labelSelector: `${OWNER_LABEL}=${OWNER_LABEL_VALUE}`, limit: 500, continue: cont },
        });
      } catch (err) {
        if (statusCodeOf(err) === 404 && cont === undefined) return [];
        throw err;
      }
      for (const item of page.items ?? []) {
        const o = ownedObjectOf(kind, item);
        if (o) owned.push(o);
      }
      const meta = isRecord(page.metadata) ? page.metadata : {};
      cont = typeof meta['continue'] === 'string' && meta['continue'] !== '' ? meta['continue'] : undefined;
    } while (cont !== undefined);
    return owned;
  }

  /** Deletes one owned object (only that incarnation: uid precondition). False when it was already gone or replaced. */
  async #deleteOwned(kind: KubeKind, o: OwnedObject): Promise<boolean> {
    try {
      await this.#http.request({
        method: 'DELETE',
        path: objectPath(kind, o.namespace, o.name),
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          ...(o.uid !== undefined ? { preconditions: { uid: o.uid } } : {}),
        },
      });
      return true;
    } catch (err) {
      const status = statusCodeOf(err);
      if (status === 404 || status === 409) return false;
      throw err;
    }
  }
}

/** An object the applier owns and may prune. */
export interface OwnedObject {
  readonly id: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

/** An item of an ownership-label list, if its own labels say it is ours (never trusting the selector alone). */
export function ownedObjectOf(kind: KubeKind, item: unknown): OwnedObject | undefined {
  if (!isRecord(item) || !isRecord(item['metadata'])) return undefined;
  const meta = item['metadata'];
  const labels = isRecord(meta['labels']) ? meta['labels'] : {};
  if (labels[OWNER_LABEL] !== OWNER_LABEL_VALUE || typeof meta['name'] !== 'string') return undefined;
  const namespace = kind.ref.namespaced && typeof meta['namespace'] === 'string' ? meta['namespace'] : '';
  const id = resourceId({
    apiVersion: kind.ref.apiVersion,
    kind: kind.ref.kind,
    metadata: { name: meta['name'], ...(namespace !== '' ? { namespace } : {}) },
  });
  return { id, namespace, name: meta['name'], ...(typeof meta['uid'] === 'string' ? { uid: meta['uid'] } : {}) };
}

/** The apply body: the resource as computed, plus the ownership label whatever the translator set. */
function withOwnerLabel(resource: Resource): Resource {
  return {
    ...resource,
    metadata: { ...resource.metadata, labels: { ...resource.metadata.labels, [OWNER_LABEL]: OWNER_LABEL_VALUE } },
  };
}

function summarize(failures: readonly string[]): string {
  const shown = failures.slice(0, 5).join('; ');
  return failures.length > 5 ? `${shown}; and ${failures.length - 5} more` : shown;
}
