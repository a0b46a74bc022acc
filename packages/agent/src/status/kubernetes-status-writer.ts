import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { canonicalJson, defaultPluralOf } from '@meshrelay/api';
import { KubeHttpClient, statusCodeOf } from '../kube/kube-http.ts';
import { WATCHED_KINDS } from '../kube/kube-kinds.ts';
import {
  statusField,
  statusKey,
  withObservedGeneration,
  type ReportedStatus,
  type StatusWriter,
} from './resource-status.ts';

function statusPath(s: ReportedStatus): string {
  const plural =
    WATCHED_KINDS.find((k) => k.ref.apiVersion === s.apiVersion && k.ref.kind === s.kind)?.plural ??
    defaultPluralOf(s.kind);
  return `/apis/${s.apiVersion}/namespaces/${encodeURIComponent(s.namespace)}/${plural}/${encodeURIComponent(s.name)}/status`;
}

/** The parts of the live object a status write depends on. */
interface LiveMetadata {
  readonly metadata?: { readonly generation?: number; readonly resourceVersion?: string };
}

/** Attempts per resource and report when the object changes between the read and the patch. */
const MAX_ATTEMPTS = 3;

/**
 * The `kubernetes` provider's status writer: a JSON merge patch of `status` (state + per-cluster
 * results) through each resource's status subresource, so spec and metadata are never touched.
 *
 * observedGeneration is the live object's metadata.generation, read from the status subresource
 * just before the patch, and the patch carries that read's resourceVersion as a precondition: if
 * the object changed in between, the API server answers 409 and the write starts again from a
 * fresh read, so a status never claims a generation it was not written against. (Input snapshots
 * leave generation out so that equal content hashes equally whichever provider found it; the
 * management plane therefore reports 0, and the live object is the only source.)
 *
 * Writes only what changed (status or generation) since the last successful write; a cluster no
 * longer listed is removed (null in the patch). A resource deleted meanwhile (404) is skipped;
 * other failures are logged and retried with the next report.
 */
export class KubernetesStatusWriter implements StatusWriter {
  readonly #http: KubeHttpClient;
  readonly #logger: Logger;
  /** What was last written per resource key (its status field). */
  readonly #written = new Map<string, ReturnType<typeof statusField>>();

  constructor(options: { readonly kubeConfig: KubeConfig; readonly logger: Logger }) {
    this.#http = new KubeHttpClient(options.kubeConfig);
    this.#logger = options.logger;
  }

  async write(statuses: readonly ReportedStatus[]): Promise<void> {
    const current = new Set<string>();
    for (const status of statuses) {
      const key = statusKey(status);
      current.add(key);
      try {
        await this.#writeOne(key, status);
      } catch (err) {
        if (statusCodeOf(err) === 404)
          this.#logger.debug({ resource: key }, 'resource gone before its status was written');
        else
          this.#logger.warn({ err, resource: key }, 'could not write a resource status; the next report tries again');
      }
    }
    for (const key of this.#written.keys()) if (!current.has(key)) this.#written.delete(key);
  }

  async #writeOne(key: string, status: ReportedStatus): Promise<void> {
    const path = statusPath(status);
    for (let attempt = 1; ; attempt++) {
      const live = await this.#http.request<LiveMetadata>({ method: 'GET', path });
      const generation = live.metadata?.generation;
      const field = statusField(generation === undefined ? status : withObservedGeneration(status, generation));
      const before = this.#written.get(key);
      if (before !== undefined && canonicalJson(before) === canonicalJson(field)) return;
      const gone = Object.keys(before?.clusters ?? {}).filter((c) => !(c in field.clusters));
      const patch = {
        metadata: { resourceVersion: live.metadata?.resourceVersion },
        status: {
          state: field.state,
          clusters: { ...field.clusters, ...Object.fromEntries(gone.map((c) => [c, null])) },
        },
      };
      try {
        await this.#http.request({ method: 'PATCH', path, body: patch, contentType: 'application/merge-patch+json' });
        this.#written.set(key, field);
        return;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt >= MAX_ATTEMPTS) throw err;
      }
    }
  }
}
