// The state directory's registry files, written compare-and-set. A record carries its revision
// (metadata.resourceVersion, a counter as a string, as Kubernetes spells it; absent counts as 0).
// A writer holds the record's lock (file-record-lock.ts), reads the record, applies its change to
// what it read, and renames the new record into place only if the file still holds exactly the
// text it read: a record edited meanwhile by someone not taking the lock (an operator's editor)
// is never overwritten, the writer starts again from the fresh copy.

import { randomUUID } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KINDS, MeshrelayError, type KubernetesCluster } from '@meshrelay/api';
import { clusterSpecProblem } from './cluster-spec.ts';
import { withFileLock, type FileLockOptions } from './file-record-lock.ts';
import type { TokenRecord } from './tokens.ts';

/** A record as read from its file: the cluster (without the revision), its revision and its text. */
export interface StoredCluster {
  readonly cluster: KubernetesCluster;
  readonly revision: number;
  readonly text: string;
}

export type ParsedCluster =
  { readonly cluster: KubernetesCluster; readonly revision: number } | { readonly problem: string };

export class ClusterFiles {
  readonly #clustersDir: string;
  readonly #tokensDir: string;
  readonly #locksDir: string;
  readonly #lock: FileLockOptions;

  constructor(dir: string, lock: FileLockOptions) {
    this.#clustersDir = join(dir, 'clusters');
    this.#tokensDir = join(dir, 'tokens');
    // Not in clusters/: the directory watch there would wake every replica for each lock.
    this.#locksDir = join(dir, 'locks');
    this.#lock = lock;
  }

  get clustersDir(): string {
    return this.#clustersDir;
  }

  get tokensDir(): string {
    return this.#tokensDir;
  }

  clusterPath(name: string): string {
    return join(this.#clustersDir, `${name}.json`);
  }

  /** Runs `work` holding the cluster's lock: its record and token file change only under it. */
  locked<T>(name: string, work: () => Promise<T>): Promise<T> {
    return withFileLock(join(this.#locksDir, `${name}.lock`), this.#lock, work);
  }

  /** The record on disk, or undefined when there is none; throws when it cannot be understood. */
  async read(name: string): Promise<StoredCluster | undefined> {
    const text = await readText(this.clusterPath(name));
    if (text === undefined) return undefined;
    const parsed = parseCluster(text, name);
    if ('problem' in parsed) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        `registry record ${this.clusterPath(name)} is invalid (${parsed.problem}); fix or remove it before changing cluster "${name}"`,
      );
    }
    return { ...parsed, text };
  }

  /**
   * Writes `next` as the revision after `base` (undefined: the record must not exist yet).
   * Returns false, writing nothing, when the file no longer holds `base`'s text.
   */
  async replace(name: string, base: StoredCluster | undefined, next: KubernetesCluster): Promise<boolean> {
    const path = this.clusterPath(name);
    const stamped = { ...next, metadata: { ...next.metadata, resourceVersion: String((base?.revision ?? 0) + 1) } };
    const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
    await writeFile(tmp, `${JSON.stringify(stamped, null, 2)}\n`, { mode: 0o644 });
    try {
      if ((await readText(path)) !== base?.text) return false;
      await rename(tmp, path);
      return true;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  async remove(name: string): Promise<void> {
    await rm(this.clusterPath(name), { force: true });
    await rm(this.#tokenPath(name), { force: true });
  }

  async readTokens(name: string): Promise<TokenRecord | undefined> {
    try {
      return JSON.parse(await readFile(this.#tokenPath(name), 'utf8')) as TokenRecord;
    } catch {
      return undefined;
    }
  }

  async writeTokens(name: string, record: TokenRecord): Promise<void> {
    const path = this.#tokenPath(name);
    const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
    await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, path);
  }

  #tokenPath(name: string): string {
    return join(this.#tokensDir, `${name}.json`);
  }
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** A record file's text as a cluster and its revision, or the problem with it (naming the field). */
export function parseCluster(text: string, name: string): ParsedCluster {
  let parsed: KubernetesCluster & { metadata: { resourceVersion?: unknown } };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (err) {
    return { problem: `not valid JSON: ${(err as Error).message}` };
  }
  const problem = describeClusterProblem(parsed, name);
  if (problem) return { problem };
  const { resourceVersion, ...metadata } = parsed.metadata;
  const revision = resourceVersion === undefined ? 0 : Number(resourceVersion);
  if (
    typeof resourceVersion !== 'undefined' &&
    (typeof resourceVersion !== 'string' || !Number.isSafeInteger(revision) || revision < 0)
  ) {
    return { problem: 'metadata.resourceVersion must be a whole number written as a string' };
  }
  return { cluster: { ...parsed, metadata }, revision };
}

function describeClusterProblem(c: KubernetesCluster, name: string): string | undefined {
  if (c?.kind !== 'KubernetesCluster' || c.apiVersion !== KINDS.KubernetesCluster.apiVersion)
    return 'apiVersion/kind must be admin.gloo.solo.io/v2 KubernetesCluster';
  if (c.metadata?.name !== name) return `metadata.name must be "${name}" (the file name)`;
  if (typeof c.metadata.uid !== 'string' || c.metadata.uid === '') return 'metadata.uid is missing';
  if (typeof c.spec !== 'object' || c.spec === null) return 'spec is missing';
  return clusterSpecProblem(c.spec);
}
