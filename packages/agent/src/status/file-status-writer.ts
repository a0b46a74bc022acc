import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { stringify } from 'yaml';
import { DEFAULT_MANIFEST_GENERATION, type ManifestGenerations } from '../discovery/manifest-generations.ts';
import {
  statusField,
  statusKey,
  withObservedGeneration,
  type ReportedStatus,
  type StatusWriter,
} from './resource-status.ts';

/**
 * The directory, inside the manifests directory, that holds the status files (a dot-directory: never read as input).
 */
export const STATUS_DIR = '.meshrelay-status';

const HEADER =
  '# Written by the meshrelay agent: the status the management plane reported for this resource. Do not edit.\n';

/**
 * The `file` provider's status writer: one `<Kind>.<namespace>.<name>.yaml` in its directory
 * (`statusDir`, by default `<manifests>/.meshrelay-status`) per Gloo resource, holding its identity and `status` (never
 * the manifest's content). Each file is
 * written to a temporary name and renamed, so a reader sees the old or the new file, never a partial
 * one. Files of resources no longer reported are removed. The file provider skips dot-directories,
 * so these files are never read back as input. observedGeneration is the manifest's own
 * metadata.generation when it sets one, else 1 (see ManifestGenerations).
 */
export class FileStatusWriter implements StatusWriter {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #generations: ManifestGenerations | undefined;

  /** `statusDir` keeps the files out of a manifests dir that is read-only or under version control. */
  constructor(options: {
    readonly manifestsDir: string;
    readonly statusDir?: string;
    readonly logger: Logger;
    readonly generations?: ManifestGenerations;
  }) {
    this.#dir = options.statusDir ?? path.join(options.manifestsDir, STATUS_DIR);
    this.#logger = options.logger;
    this.#generations = options.generations;
  }

  get directory(): string {
    return this.#dir;
  }

  async write(statuses: readonly ReportedStatus[]): Promise<void> {
    try {
      await mkdir(this.#dir, { recursive: true });
      const wanted = new Set<string>();
      for (const status of statuses) {
        const file = `${statusKey(status)}.yaml`;
        wanted.add(file);
        const generation = this.#generations?.generationOf(status) ?? DEFAULT_MANIFEST_GENERATION;
        await this.#writeOne(file, render(withObservedGeneration(status, generation)));
      }
      for (const entry of await readdir(this.#dir)) {
        if (entry.endsWith('.yaml') && !wanted.has(entry)) await rm(path.join(this.#dir, entry), { force: true });
      }
      this.#logger.debug({ dir: this.#dir, statuses: statuses.length }, 'resource statuses written');
    } catch (err) {
      this.#logger.warn({ err, dir: this.#dir }, 'could not write resource status files; the next report tries again');
    }
  }

  async #writeOne(file: string, content: string): Promise<void> {
    const target = path.join(this.#dir, file);
    const existing = await readFile(target, 'utf8').catch(() => undefined);
    if (existing === content) return;
    const temp = path.join(this.#dir, `.${file}.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(temp, content, { mode: 0o644 });
    await rename(temp, target);
  }
}

function render(status: ReportedStatus): string {
  const doc = {
    apiVersion: status.apiVersion,
    kind: status.kind,
    metadata: { name: status.name, namespace: status.namespace },
    status: statusField(status),
  };
  return HEADER + stringify(doc);
}
