import { randomUUID } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
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
import { assertClusterSpec } from './cluster-spec.ts';
import { DEFAULT_FILE_LOCK, type FileLockOptions } from './file-record-lock.ts';
import { ClusterFiles, parseCluster } from './file-record-store.ts';
import { formatRevocationMark, revocationMark } from './revocation.ts';
import { issueToken, tokenMatches, type IssuedToken, type TokenRecord } from './tokens.ts';

export interface FileRegistryOptions {
  readonly dir: string;
  readonly tokenTtlSeconds: number;
  /** How long a rotated-out token keeps working. */
  readonly tokenOverlapSeconds: number;
  readonly logger: Logger;
  readonly now?: () => Date;
  /** How long a write waits for another process's lock on the record, and when a lock is abandoned. */
  readonly lock?: Partial<FileLockOptions>;
}

/** Attempts of a write whose record changed under it (only a writer ignoring the lock does that). */
const WRITE_ATTEMPTS = 5;

/**
 * ClusterRegistry kept in a state directory: `clusters/<name>.json` holds the
 * KubernetesCluster, `tokens/<name>.json` the token hashes. Every write is compare-and-set
 * (file-record-store.ts): under the record's lock, the change is applied to the record as it is
 * on disk — never to this process's copy, which may miss another replica's write — and the
 * result is renamed into place, so a reader never sees half a record. The directory is watched,
 * so edits by other replicas or an operator take effect live.
 */
export async function createFileClusterRegistry(options: FileRegistryOptions): Promise<ClusterRegistry> {
  const registry = new FileClusterRegistry(options);
  await registry.init();
  return registry;
}

/** A change to a record as read from disk: the record to write, or undefined to write nothing. */
type RecordChange = (
  fresh: KubernetesCluster,
) => Promise<KubernetesCluster | undefined> | KubernetesCluster | undefined;

class FileClusterRegistry implements ClusterRegistry {
  readonly #opts: FileRegistryOptions;
  readonly #files: ClusterFiles;
  readonly #now: () => Date;
  readonly #cache = new ClusterCache();
  #watcher: FSWatcher | undefined;
  #reloadTimer: NodeJS.Timeout | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #writeChain: Promise<unknown> = Promise.resolve();
  /**
   * A reload waits in the write chain and has not started: it will read whatever changes before
   * it does, so another is not queued behind it. Without this, a loaded process whose reload took
   * longer than the 2 s poll queued reloads faster than it ran them, and every registry write (a
   * cluster's ClusterWarm condition, which its first input's ack waits for) waited behind them
   * all: 5 s, then 15 s, then 44 s as 50 clusters arrived over 2 minutes.
   */
  #reloadQueued = false;

  constructor(options: FileRegistryOptions) {
    this.#opts = options;
    this.#files = new ClusterFiles(options.dir, { ...DEFAULT_FILE_LOCK, ...options.lock });
    this.#now = options.now ?? (() => new Date());
  }

  async init(): Promise<void> {
    await mkdir(this.#files.clustersDir, { recursive: true });
    await mkdir(this.#files.tokensDir, { recursive: true, mode: 0o700 });
    await this.#reload();
    this.#watcher = watch(this.#files.clustersDir, () => this.#scheduleReload());
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
        throw new MeshrelayError(
          'MESHRELAY_ERR_INVALID_ARGUMENT',
          `cluster name "${name}" is not a DNS-1123 label (lowercase letters, digits and "-", at most 63)`,
        );
      }
      if (this.#cache.has(name)) throw exists(name);
      assertClusterSpec({ ...options });
      const now = this.#now();
      const cluster = newClusterRecord(name, options, now);
      const issued = await this.#files.locked(name, async () => {
        // Another replica may have registered the name since this one last read the directory.
        if (await this.#files.read(name)) throw exists(name);
        const token = this.#issueToken(now, undefined);
        await this.#files.writeTokens(name, token.record);
        if (!(await this.#files.replace(name, undefined, cluster))) throw exists(name);
        return token;
      });
      this.#cache.apply(name, cluster);
      return {
        cluster: this.#cache.get(name) as KubernetesCluster,
        token: issued.token,
        tokenExpiresAt: issued.expiresAt,
      };
    });
  }

  deregister(name: string): Promise<void> {
    return this.#serial(async () => {
      await this.#files.locked(name, async () => {
        if (!(await this.#files.read(name).catch(() => this.#cache.get(name)))) {
          this.#cache.apply(name, undefined);
          throw notFound(name);
        }
        await this.#files.remove(name);
      });
      this.#cache.apply(name, undefined);
    });
  }

  rotateToken(name: string): Promise<RegistrationResult> {
    return this.#serial(async () => {
      const now = this.#now();
      let issued: IssuedToken | undefined;
      const cluster = await this.#change(name, async () => {
        issued = this.#issueToken(now, await this.#files.readTokens(name));
        await this.#files.writeTokens(name, issued.record);
        return undefined;
      });
      const token = issued as IssuedToken;
      return { cluster, token: token.token, tokenExpiresAt: token.expiresAt };
    });
  }

  revoke(name: string): Promise<RevocationResult> {
    return this.#serial(async () => {
      const now = this.#now();
      const mark = revocationMark(now);
      let issued: IssuedToken | undefined;
      const cluster = await this.#change(name, async (fresh) => {
        // The token first: once the mark is visible, agents re-register, and only with the new token.
        issued = issueToken(now, this.#opts.tokenTtlSeconds, 0, undefined);
        await this.#files.writeTokens(name, issued.record);
        return { ...fresh, spec: { ...fresh.spec, revokeCertificatesBefore: formatRevocationMark(mark) } };
      });
      const token = issued as IssuedToken;
      return { cluster, token: token.token, tokenExpiresAt: token.expiresAt, revokedBefore: mark };
    });
  }

  async verifyToken(name: string, token: string): Promise<KubernetesCluster> {
    const refused = new MeshrelayError(
      'MESHRELAY_ERR_TOKEN_INVALID',
      `relay identity token refused for cluster "${name}": unknown cluster, wrong token or expired token`,
    );
    const cluster = this.#cache.get(name);
    const record = cluster ? await this.#files.readTokens(name) : undefined;
    if (!cluster || !record || !tokenMatches(record, token, this.#now())) throw refused;
    return cluster;
  }

  update(name: string, update: ClusterUpdate): Promise<KubernetesCluster> {
    const fields = Object.fromEntries(Object.entries(update).filter(([, v]) => v !== undefined));
    return this.#serial(() => this.#change(name, (fresh) => ({ ...fresh, spec: { ...fresh.spec, ...fields } })));
  }

  setCondition(name: string, condition: Omit<ClusterCondition, 'lastTransitionTime'>): Promise<void> {
    return this.#serial(async () => {
      const cached = this.#cache.get(name);
      // Most calls repeat what the record already says (a condition per accepted snapshot).
      if (!cached || withCondition(cached, condition, this.#now()) === undefined) return;
      await this.#change(name, (fresh) => withCondition(fresh, condition, this.#now())).catch((err: unknown) => {
        // Deregistered meanwhile: there is no condition to keep.
        if (!(err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_CLUSTER_NOT_FOUND')) throw err;
      });
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

  /**
   * Applies `change` to the record as it is on disk, under its lock, and writes the result as the
   * next revision; starts again from the fresh record when the file changed under the write.
   * Memory follows what was written (or read, when the change wrote nothing).
   */
  async #change(name: string, change: RecordChange): Promise<KubernetesCluster> {
    for (let attempt = 1; attempt <= WRITE_ATTEMPTS; attempt++) {
      const written = await this.#files.locked(name, async () => {
        const base = await this.#files.read(name);
        if (!base) throw notFound(name);
        const next = await change(base.cluster);
        if (next === undefined) return base.cluster;
        assertClusterSpec(next.spec);
        return (await this.#files.replace(name, base, next)) ? next : undefined;
      });
      if (written) {
        this.#cache.apply(name, written);
        return this.#cache.get(name) as KubernetesCluster;
      }
      this.#opts.logger.debug(
        { cluster: name, attempt },
        'registry record changed under the write; applying the change to the fresh record',
      );
    }
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAVAILABLE',
      `registry record ${this.#files.clusterPath(name)} changed under each of ${WRITE_ATTEMPTS} attempts to write it; try again`,
    );
  }

  #issueToken(now: Date, existing: TokenRecord | undefined): IssuedToken {
    return issueToken(now, this.#opts.tokenTtlSeconds, this.#opts.tokenOverlapSeconds, existing);
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#writeChain.then(work, work);
    this.#writeChain = next.catch(() => undefined);
    return next;
  }

  #scheduleReload(): void {
    clearTimeout(this.#reloadTimer);
    this.#reloadTimer = setTimeout(() => {
      if (this.#reloadQueued) return;
      this.#reloadQueued = true;
      this.#serial(() => {
        this.#reloadQueued = false;
        return this.#reload();
      }).catch((err: unknown) => this.#opts.logger.error({ err }, 'registry reload failed'));
    }, 50);
  }

  /**
   * Reads every record at once (a read per record, one after the other, costs a turn of a busy
   * event loop each: seconds for 50 records while a translation runs), then applies them in
   * directory order.
   */
  async #reload(): Promise<void> {
    const names = (await readdir(this.#files.clustersDir))
      .filter((file) => file.endsWith('.json'))
      .map((file) => file.slice(0, -'.json'.length));
    const read = await Promise.all(names.map((name) => this.#readCluster(this.#files.clusterPath(name), name)));
    const seen = new Set<string>();
    for (const [i, name] of names.entries()) {
      const cluster = read[i];
      if (!cluster) continue;
      seen.add(name);
      this.#cache.apply(name, cluster);
    }
    for (const name of this.#cache.names()) if (!seen.has(name)) this.#cache.apply(name, undefined);
    this.#opts.logger.debug({ records: seen.size }, 'registry reloaded');
  }

  /** A malformed record is reported and ignored; the last good copy in memory stays in place. */
  async #readCluster(path: string, name: string): Promise<KubernetesCluster | undefined> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      this.#opts.logger.error({ err, path }, 'registry record cannot be read; keeping the previous copy');
      return this.#cache.get(name);
    }
    const parsed = parseCluster(text, name);
    if ('problem' in parsed) {
      this.#opts.logger.error(
        { path, problem: parsed.problem },
        'registry record is invalid; keeping the previous copy',
      );
      return this.#cache.get(name);
    }
    return parsed.cluster;
  }
}

function exists(name: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_CLUSTER_EXISTS', `cluster "${name}" is already registered`);
}

function notFound(name: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${name}" is not registered`);
}

function newClusterRecord(name: string, options: RegisterOptions, now: Date): KubernetesCluster {
  return {
    apiVersion: KINDS.KubernetesCluster.apiVersion as 'admin.gloo.solo.io/v2',
    kind: 'KubernetesCluster',
    metadata: {
      name,
      namespace: DEFAULT_MANAGEMENT_NAMESPACE,
      uid: randomUUID(),
      creationTimestamp: now.toISOString(),
    },
    spec: {
      ...(options.clusterDomain !== undefined ? { clusterDomain: options.clusterDomain } : {}),
      ...(options.trustDomain !== undefined ? { trustDomain: options.trustDomain } : {}),
      skipWarming: options.skipWarming ?? false,
    },
    status: {
      conditions: [
        {
          type: 'ClusterWarm',
          status: 'False',
          reason: 'ClusterRegistered',
          message: 'no input snapshot received yet',
          lastTransitionTime: now.toISOString(),
        },
      ],
    },
  };
}

/** The record with the condition set (by type), or undefined when type, status and reason are already so. */
function withCondition(
  cluster: KubernetesCluster,
  condition: Omit<ClusterCondition, 'lastTransitionTime'>,
  now: Date,
): KubernetesCluster | undefined {
  const conditions = cluster.status?.conditions ?? [];
  const old = conditions.find((c) => c.type === condition.type);
  if (old && old.status === condition.status && old.reason === condition.reason) return undefined;
  return {
    ...cluster,
    status: {
      ...cluster.status,
      conditions: [
        ...conditions.filter((c) => c.type !== condition.type),
        { ...condition, lastTransitionTime: now.toISOString() },
      ],
    },
  };
}
