import { watch, type FSWatcher } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import { MeshrelayError, type InputSnapshot } from '@meshrelay/api';
import type { DiscoveryProvider } from './discovery-provider.ts';
import { logNewInputProblems, type InputProblem } from './input-problem.ts';
import type { ResourceValidator } from './manifest-parser.ts';
import type { ManifestGenerations } from './manifest-generations.ts';
import {
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_TOTAL_BYTES,
  isManifestPath,
  type ManifestLimits,
} from './manifest-reader.ts';
import { assembleInputSnapshot } from './manifest-snapshot.ts';
import { ManifestSet } from './manifest-set.ts';
import { DirectoryWatchers } from './directory-watchers.ts';

export interface FileProviderOptions {
  readonly cluster: string;
  readonly manifestsDir: string;
  readonly validate: ResourceValidator;
  readonly logger: Logger;
  /** Quiet time after the last change before a new snapshot is built (default 100 ms). */
  readonly debounceMs?: number;
  /**
   * Safety rescan period: stats every file (reads only changed ones), for watch events the platform drops (default 60
   * s).
   */
  readonly rescanIntervalMs?: number;
  /** Follow changes with fs.watch (default true); without it only the periodic rescan notices changes. */
  readonly watch?: boolean;
  /** Random per process start unless given. */
  readonly epoch?: string;
  /** Size and symlink limits (defaults: DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES, no external symlinks). */
  readonly limits?: Partial<ManifestLimits>;
  /** Told the manifests' own metadata.generation values on every rebuild (for the status writer). */
  readonly generations?: ManifestGenerations;
}

/**
 * The `file` discovery provider: a directory of YAML/JSON manifests becomes the
 * cluster's input snapshot. Follows changes with a recursive fs.watch (an event
 * naming a manifest stats and reads just that file) plus a slow safety rescan
 * that compares stats and reads only what changed; debounced; identical content
 * never makes a new generation. Snapshots are assembled from per-file results
 * and per-resource encodings, so an edit re-parses and re-encodes only its file.
 * Dot-files and dot-directories are skipped; symlinked files are followed while
 * they stay inside the dir (the layout of a mounted Kubernetes ConfigMap).
 */
export class FileDiscoveryProvider implements DiscoveryProvider {
  readonly #opts: FileProviderOptions;
  readonly #root: string;
  readonly #epoch: string;
  readonly #limits: ManifestLimits;
  readonly #listeners = new Set<(snapshot: InputSnapshot) => void>();
  #set: ManifestSet | undefined;
  #current: InputSnapshot | undefined;
  #problems: readonly InputProblem[] = [];
  #watcher: FSWatcher | undefined;
  #directoryWatchers: DirectoryWatchers | undefined;
  #rescanTimer: NodeJS.Timeout | undefined;
  #debounceTimer: NodeJS.Timeout | undefined;
  #firstPendingChange = 0;
  #scanning: Promise<void> | undefined;
  #pendingAll = false;
  readonly #pendingPaths = new Set<string>();
  #stopped = false;

  constructor(options: FileProviderOptions) {
    this.#opts = options;
    this.#root = path.resolve(options.manifestsDir);
    this.#epoch = options.epoch ?? randomUUID();
    this.#limits = {
      maxFileBytes: options.limits?.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
      maxTotalBytes: options.limits?.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES,
      followExternalSymlinks: options.limits?.followExternalSymlinks ?? false,
    };
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

  /** Manifest files read (and parsed) since start; unchanged files are never read again. */
  get filesRead(): number {
    return this.#set?.reads ?? 0;
  }

  onSnapshot(listener: (snapshot: InputSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async start(): Promise<void> {
    const info = await stat(this.#root).catch(() => undefined);
    if (!info?.isDirectory()) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `--manifests-dir: ${this.#root} is not a readable directory`,
      );
    }
    this.#set = new ManifestSet({
      root: this.#root,
      realRoot: await realpath(this.#root),
      validate: this.#opts.validate,
      limits: this.#limits,
    });
    await this.rescan();
    this.#startWatching();
    this.#rescanTimer = setInterval(() => this.#requestScan(0, undefined), this.#opts.rescanIntervalMs ?? 60_000);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#rescanTimer);
    clearTimeout(this.#debounceTimer);
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#directoryWatchers?.close();
    await this.#scanning;
  }

  /**
   * Stats the whole directory now (serialized with any scan in progress), reads what changed and publishes a snapshot
   * if content changed.
   */
  async rescan(): Promise<void> {
    this.#pendingAll = true;
    return this.#drain();
  }

  #drain(): Promise<void> {
    this.#scanning ??= (async () => {
      while (!this.#stopped && (this.#pendingAll || this.#pendingPaths.size > 0)) {
        const all = this.#pendingAll;
        const paths = [...this.#pendingPaths];
        this.#pendingAll = false;
        this.#pendingPaths.clear();
        try {
          await this.#sync(all ? 'all' : paths);
        } catch (err) {
          this.#opts.logger.error({ err, dir: this.#root }, 'manifest scan failed; keeping the previous snapshot');
        }
      }
    })().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  #startWatching(): void {
    if (this.#watcher || this.#stopped || this.#opts.watch === false) return;
    try {
      this.#watcher = watch(this.#root, { recursive: true, persistent: false }, (_event, filename) =>
        this.#requestScan(this.#opts.debounceMs ?? 100, filename),
      );
      this.#watcher.on('error', (err) => {
        this.#opts.logger.warn({ err, dir: this.#root }, 'manifest watch failed; relying on periodic rescan');
        this.#watcher?.close();
        this.#watcher = undefined;
        this.#requestScan(0, undefined);
      });
    } catch (err) {
      this.#opts.logger.warn({ err, dir: this.#root }, 'cannot watch the manifests dir; relying on periodic rescan');
    }
  }

  /** Follows each manifest directory on its own as well (see DirectoryWatchers); a directory new to it is scanned. */
  #watchDirectories(set: ManifestSet): void {
    if (this.#stopped || this.#opts.watch === false) return;
    this.#directoryWatchers ??= new DirectoryWatchers(
      this.#root,
      (rel) => this.#requestScan(this.#opts.debounceMs ?? 100, rel),
      this.#opts.logger,
    );
    // Files written into a directory before its watch began are found by one more scan.
    if (this.#directoryWatchers.update(set.directories()) && this.#current) this.#requestScan(0, undefined);
  }

  /**
   * Queues a path named by a watch event (a manifest: stat just it; anything
   * else, e.g. a directory or a ConfigMap's `..data` swap: stat everything)
   * and schedules a scan: trailing debounce with a ceiling, so a directory that
   * never stops changing still publishes.
   */
  #requestScan(debounceMs: number, filename: string | null | undefined): void {
    if (this.#stopped) return;
    const rel = typeof filename === 'string' ? filename.split(path.sep).join('/') : undefined;
    if (rel !== undefined && isManifestPath(rel)) this.#pendingPaths.add(rel);
    else this.#pendingAll = true;
    const now = Date.now();
    if (this.#debounceTimer === undefined) this.#firstPendingChange = now;
    clearTimeout(this.#debounceTimer);
    const ceiling = this.#firstPendingChange + Math.max(10 * debounceMs, 1_000);
    const delay = Math.max(0, Math.min(debounceMs, ceiling - now));
    this.#debounceTimer = setTimeout(() => {
      this.#debounceTimer = undefined;
      this.#startWatching();
      void this.#drain();
    }, delay);
  }

  async #sync(request: 'all' | readonly string[]): Promise<void> {
    const set = this.#set;
    if (!set) return;
    let changed: boolean;
    try {
      changed = (request === 'all' ? await set.syncAll() : await set.syncPaths(request)).changed;
    } catch (err) {
      // Keep the previous snapshot: a vanished directory is not evidence that the resources are gone.
      this.#setProblems([
        {
          file: '.',
          document: -1,
          path: '',
          message: `cannot list the manifests dir (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        },
      ]);
      return;
    }
    this.#watchDirectories(set);
    if (!changed && this.#current) return;
    const { entries, problems } = set.merged();
    this.#opts.generations?.update(entries);
    this.#setProblems(problems);
    this.#publishIfChanged(entries);
  }

  #publishIfChanged(entries: Parameters<typeof assembleInputSnapshot>[0]['entries']): void {
    const generation = (this.#current?.generation ?? 0) + 1;
    const snapshot = assembleInputSnapshot({ cluster: this.#opts.cluster, epoch: this.#epoch, generation, entries });
    if (snapshot.hash === this.#current?.hash) return;
    this.#current = snapshot;
    this.#opts.logger.info(
      {
        cluster: snapshot.cluster,
        generation,
        hash: snapshot.hash,
        resources: snapshot.resources.length,
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
