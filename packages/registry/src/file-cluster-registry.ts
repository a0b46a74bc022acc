import { randomUUID } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import {
  DEFAULT_MANAGEMENT_NAMESPACE,
  KINDS,
  MeshrelayError,
  isValidClusterName,
  type ClusterCondition,
  type KubernetesCluster,
} from '@meshrelay/api';
import type {
  ClusterRegistry,
  ClusterUpdate,
  RegisterOptions,
  RegistrationResult,
  RegistryChange,
  RevocationResult,
} from './cluster-registry.ts';
import { ClusterCache } from './cluster-cache.ts';
import { assertClusterSpec, clusterSpecProblem } from './cluster-spec.ts';
import { formatRevocationMark, revocationMark } from './revocation.ts';
import { issueToken, tokenMatches, type IssuedToken, type TokenRecord } from './tokens.ts';

export interface FileRegistryOptions {
  readonly dir: string;
  readonly tokenTtlSeconds: number;
  /** How long a rotated-out token keeps working. */
  readonly tokenOverlapSeconds: number;
  readonly logger: Logger;
  readonly now?: () => Date;
}

/**
 * ClusterRegistry kept in a state directory: `clusters/<name>.json` holds the
 * KubernetesCluster, `tokens/<name>.json` the token hashes. Every write goes to a
 * temporary file renamed into place, so a reader never sees half a record. The
 * directory is watched, so edits by other replicas or an operator take effect live.
 */
export async function createFileClusterRegistry(options: FileRegistryOptions): Promise<ClusterRegistry> {
  const registry = new FileClusterRegistry(options);
  await registry.init();
  return registry;
}

class FileClusterRegistry implements ClusterRegistry {
  readonly #opts: FileRegistryOptions;
  readonly #clustersDir: string;
  readonly #tokensDir: string;
  readonly #now: () => Date;
  readonly #cache = new ClusterCache();
  #watcher: FSWatcher | undefined;
  #reloadTimer: NodeJS.Timeout | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #writeChain: Promise<unknown> = Promise.resolve();

  constructor(options: FileRegistryOptions) {
    this.#opts = options;
    this.#clustersDir = join(options.dir, 'clusters');
    this.#tokensDir = join(options.dir, 'tokens');
    this.#now = options.now ?? (() => new Date());
  }

  async init(): Promise<void> {
    await mkdir(this.#clustersDir, { recursive: true });
    await mkdir(this.#tokensDir, { recursive: true, mode: 0o700 });
    await this.#reload();
    this.#watcher = watch(this.#clustersDir, () => this.#scheduleReload());
    this.#watcher.on('error', (err) => this.#opts.logger.warn({ err }, 'registry watch failed; relying on polling'));
    // fs.watch can miss events (network filesystems, editors that swap files): poll as a backstop.
    this.#pollTimer = setInterval(() => this.#scheduleReload(), 2000);
    this.#pollTimer.unref();
  }

  list(): readonly KubernetesCluster[] {
    return this.#cache.list();
  }

  get(name: string): KubernetesCluster | undefined {
    return this.#cache.get(name);
  }

  register(name: string, options: RegisterOptions): Promise<RegistrationResult> {
    return this.#serial(async () => {
      if (!isValidClusterName(name)) {
        throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `cluster name "${name}" is not a DNS-1123 label (lowercase letters, digits and "-", at most 63)`);
      }
      if (this.#cache.has(name)) throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_EXISTS', `cluster "${name}" is already registered`);
      assertClusterSpec({ ...options });
      const now = this.#now();
      const cluster: KubernetesCluster = {
        apiVersion: KINDS.KubernetesCluster.apiVersion as 'admin.gloo.solo.io/v2',
        kind: 'KubernetesCluster',
        metadata: { name, namespace: DEFAULT_MANAGEMENT_NAMESPACE, uid: randomUUID(), creationTimestamp: now.toISOString() },
        spec: {
          ...(options.clusterDomain !== undefined ? { clusterDomain: options.clusterDomain } : {}),
          ...(options.trustDomain !== undefined ? { trustDomain: options.trustDomain } : {}),
          skipWarming: options.skipWarming ?? false,
        },
        status: {
          conditions: [
            { type: 'ClusterWarm', status: 'False', reason: 'ClusterRegistered', message: 'no input snapshot received yet', lastTransitionTime: now.toISOString() },
          ],
        },
      };
      const issued = this.#issueToken(now, undefined);
      await this.#writeJson(join(this.#tokensDir, `${name}.json`), issued.record, 0o600);
      await this.#writeJson(join(this.#clustersDir, `${name}.json`), cluster, 0o644);
      this.#cache.apply(name, cluster);
      return { cluster: this.#cache.get(name) as KubernetesCluster, token: issued.token, tokenExpiresAt: issued.expiresAt };
    });
  }

  deregister(name: string): Promise<void> {
    return this.#serial(async () => {
      this.#require(name);
      await rm(join(this.#clustersDir, `${name}.json`), { force: true });
      await rm(join(this.#tokensDir, `${name}.json`), { force: true });
      this.#cache.apply(name, undefined);
    });
  }

  rotateToken(name: string): Promise<RegistrationResult> {
    return this.#serial(async () => {
      const cluster = this.#require(name);
      const now = this.#now();
      const existing = await this.#readTokens(name);
      const issued = this.#issueToken(now, existing);
      await this.#writeJson(join(this.#tokensDir, `${name}.json`), issued.record, 0o600);
      return { cluster, token: issued.token, tokenExpiresAt: issued.expiresAt };
    });
  }

  revoke(name: string): Promise<RevocationResult> {
    return this.#serial(async () => {
      const cluster = this.#require(name);
      const now = this.#now();
      // The token first: once the mark is visible, agents re-register, and only with the new token.
      const issued = issueToken(now, this.#opts.tokenTtlSeconds, 0, undefined);
      await this.#writeJson(join(this.#tokensDir, `${name}.json`), issued.record, 0o600);
      const mark = revocationMark(now);
      const next: KubernetesCluster = { ...cluster, spec: { ...cluster.spec, revokeCertificatesBefore: formatRevocationMark(mark) } };
      await this.#writeJson(join(this.#clustersDir, `${name}.json`), next, 0o644);
      this.#cache.apply(name, next);
      return { cluster: this.#cache.get(name) as KubernetesCluster, token: issued.token, tokenExpiresAt: issued.expiresAt, revokedBefore: mark };
    });
  }

  async verifyToken(name: string, token: string): Promise<KubernetesCluster> {
    const refused = new MeshrelayError('MESHRELAY_ERR_TOKEN_INVALID', `relay identity token refused for cluster "${name}": unknown cluster, wrong token or expired token`);
    const cluster = this.#cache.get(name);
    const record = cluster ? await this.#readTokens(name) : undefined;
    if (!cluster || !record || !tokenMatches(record, token, this.#now())) throw refused;
    return cluster;
  }

  update(name: string, update: ClusterUpdate): Promise<KubernetesCluster> {
    return this.#serial(async () => {
      const cluster = this.#require(name);
      const next: KubernetesCluster = { ...cluster, spec: { ...cluster.spec, ...update } };
      assertClusterSpec(next.spec);
      await this.#writeJson(join(this.#clustersDir, `${name}.json`), next, 0o644);
      this.#cache.apply(name, next);
      return this.#cache.get(name) as KubernetesCluster;
    });
  }

  setCondition(name: string, condition: Omit<ClusterCondition, 'lastTransitionTime'>): Promise<void> {
    return this.#serial(async () => {
      const cluster = this.#cache.get(name);
      if (!cluster) return;
      const conditions = cluster.status?.conditions ?? [];
      const old = conditions.find((c) => c.type === condition.type);
      if (old && old.status === condition.status && old.reason === condition.reason) return;
      const next: KubernetesCluster = {
        ...cluster,
        status: {
          ...cluster.status,
          conditions: [...conditions.filter((c) => c.type !== condition.type), { ...condition, lastTransitionTime: this.#now().toISOString() }],
        },
      };
      await this.#writeJson(join(this.#clustersDir, `${name}.json`), next, 0o644);
      this.#cache.apply(name, next);
    });
  }

  onChange(listener: (change: RegistryChange) => void): () => void {
    return this.#cache.onChange(listener);
  }

  async close(): Promise<void> {
    this.#watcher?.close();
    clearInterval(this.#pollTimer);
    clearTimeout(this.#reloadTimer);
    await this.#writeChain.catch(() => undefined);
  }

  #require(name: string): KubernetesCluster {
    const cluster = this.#cache.get(name);
    if (!cluster) throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${name}" is not registered`);
    return cluster;
  }

  #issueToken(now: Date, existing: TokenRecord | undefined): IssuedToken {
    return issueToken(now, this.#opts.tokenTtlSeconds, this.#opts.tokenOverlapSeconds, existing);
  }

  async #readTokens(name: string): Promise<TokenRecord | undefined> {
    try {
      return JSON.parse(await readFile(join(this.#tokensDir, `${name}.json`), 'utf8')) as TokenRecord;
    } catch {
      return undefined;
    }
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#writeChain.then(work, work);
    this.#writeChain = next.catch(() => undefined);
    return next;
  }

  async #writeJson(path: string, value: unknown, mode: number): Promise<void> {
    const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
    await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode });
    await rename(tmp, path);
  }


  #scheduleReload(): void {
    clearTimeout(this.#reloadTimer);
    this.#reloadTimer = setTimeout(() => {
      this.#serial(() => this.#reload()).catch((err: unknown) => this.#opts.logger.error({ err }, 'registry reload failed'));
    }, 50);
  }

  async #reload(): Promise<void> {
    const seen = new Set<string>();
    for (const file of await readdir(this.#clustersDir)) {
      if (!file.endsWith('.json')) continue;
      const name = file.slice(0, -'.json'.length);
      const cluster = await this.#readCluster(join(this.#clustersDir, file), name);
      if (!cluster) continue;
      seen.add(name);
      this.#cache.apply(name, cluster);
    }
    for (const name of this.#cache.names()) if (!seen.has(name)) this.#cache.apply(name, undefined);
  }

  /** A malformed record is reported and ignored; the last good copy in memory stays in place. */
  async #readCluster(path: string, name: string): Promise<KubernetesCluster | undefined> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readFile(path, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      this.#opts.logger.error({ err, path }, 'registry record is not valid JSON; keeping the previous copy');
      return this.#cache.get(name);
    }
    const cluster = parsed as KubernetesCluster;
    const problem = describeClusterProblem(cluster, name);
    if (problem) {
      this.#opts.logger.error({ path, problem }, 'registry record is invalid; keeping the previous copy');
      return this.#cache.get(name);
    }
    return cluster;
  }
}

function describeClusterProblem(c: KubernetesCluster, name: string): string | undefined {
  if (c?.kind !== 'KubernetesCluster' || c.apiVersion !== KINDS.KubernetesCluster.apiVersion) return 'apiVersion/kind must be admin.gloo.solo.io/v2 KubernetesCluster';
  if (c.metadata?.name !== name) return `metadata.name must be "${name}" (the file name)`;
  if (typeof c.metadata.uid !== 'string' || c.metadata.uid === '') return 'metadata.uid is missing';
  if (typeof c.spec !== 'object' || c.spec === null) return 'spec is missing';
  return clusterSpecProblem(c.spec);
}
