import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { canonicalJson, defaultPluralOf } from '@meshrelay/api';
import { KubeHttpClient, statusCodeOf } from './kube-http.ts';
import { WATCHED_KINDS } from './kube-kinds.ts';
import { statusField, statusKey, type ReportedStatus, type StatusWriter } from './resource-status.ts';

function statusPath(s: ReportedStatus): string {
  const plural = WATCHED_KINDS.find((k) => k.ref.apiVersion === s.apiVersion && k.ref.kind === s.kind)?.plural ?? defaultPluralOf(s.kind);
  return `/apis/${s.apiVersion}/namespaces/${encodeURIComponent(s.namespace)}/${plural}/${encodeURIComponent(s.name)}/status`;
}

/**
 * The `kubernetes` provider's status writer: a JSON merge patch of `status` (state + per-cluster
 * results) through each resource's status subresource, so spec and metadata are never touched.
 * Writes only what changed since the last successful write; a cluster no longer listed is removed
 * (null in the patch). A resource deleted meanwhile (404) is skipped; other failures are logged and
 * retried with the next report.
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
      const field = statusField(status);
      const before = this.#written.get(key);
      if (before !== undefined && canonicalJson(before) === canonicalJson(field)) continue;
      const gone = Object.keys(before?.clusters ?? {}).filter((c) => !(c in field.clusters));
      const patch = { status: { state: field.state, clusters: { ...field.clusters, ...Object.fromEntries(gone.map((c) => [c, null])) } } };
      try {
        await this.#http.request({ method: 'PATCH', path: statusPath(status), body: patch, contentType: 'application/merge-patch+json' });
        this.#written.set(key, field);
      } catch (err) {
        if (statusCodeOf(err) === 404) this.#logger.debug({ resource: key }, 'resource gone before its status was written');
        else this.#logger.warn({ err, resource: key }, 'could not write a resource status; the next report tries again');
      }
    }
    for (const key of this.#written.keys()) if (!current.has(key)) this.#written.delete(key);
  }
}
