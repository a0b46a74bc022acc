import { watch, type FSWatcher } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import { MeshrelayError, buildInputSnapshot, formatResourceKey, resourceKey, type InputSnapshot, type Resource } from '@meshrelay/api';
import type { DiscoveryProvider } from './discovery-provider.ts';
import { compareInputProblems, formatInputProblem, type InputProblem } from './input-problem.ts';
import { parseManifest, type ManifestEntry, type ParsedManifest, type ResourceValidator } from './manifest-parser.ts';

export interface FileProviderOptions {
  readonly cluster: string;
  readonly manifestsDir: string;
  readonly validate: ResourceValidator;
  readonly logger: Logger;
  /** Quiet time after the last change before a new snapshot is built (default 100 ms). */
  readonly debounceMs?: number;
  /** Full rescan period, the fallback for watch events the platform drops (default 5 s). */
  readonly rescanIntervalMs?: number;
  /** Follow changes with fs.watch (default true); without it only the periodic rescan notices changes. */
  readonly watch?: boolean;
  /** Random per process start unless given. */
  readonly epoch?: string;
}

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

/**
 * The `file` discovery provider: a directory of YAML/JSON manifests becomes the
 * cluster's input snapshot. Follows changes with a recursive fs.watch plus a
 * periodic rescan, debounced; identical content never makes a new generation.
 * Dot-files and dot-directories are skipped, symlinked files are followed (the
 * layout of a mounted Kubernetes ConfigMap).
 */
export class FileDiscoveryProvider implements DiscoveryProvider {
  readonly #opts: FileProviderOptions;
  readonly #root: string;
  readonly #epoch: string;
  readonly #listeners = new Set<(snapshot: InputSnapshot) => void>();
  readonly #cache = new Map<string, { text: string; parsed: ParsedManifest }>();
  #current: InputSnapshot | undefined;
  #problems: readonly InputProblem[] = [];
  #watcher: FSWatcher | undefined;
  #rescanTimer: NodeJS.Timeout | undefined;
  #debounceTimer: NodeJS.Timeout | undefined;
  #firstPendingChange = 0;
  #scanning: Promise<void> | undefined;
  #rescanRequested = false;
  #stopped = false;

  constructor(options: FileProviderOptions) {
    this.#opts = options;
    this.#root = path.resolve(options.manifestsDir);
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

  onSnapshot(listener: (snapshot: InputSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async start(): Promise<void> {
    const info = await stat(this.#root).catch(() => undefined);
    if (!info?.isDirectory()) {
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--manifests-dir: ${this.#root} is not a readable directory`);
    }
    await this.rescan();
    this.#startWatching();
    this.#rescanTimer = setInterval(() => this.#requestScan(0), this.#opts.rescanIntervalMs ?? 5_000);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#rescanTimer);
    clearTimeout(this.#debounceTimer);
    this.#watcher?.close();
    this.#watcher = undefined;
    await this.#scanning;
  }

  /** Reads the whole directory now (serialized with any scan in progress) and publishes a snapshot if content changed. */
  async rescan(): Promise<void> {
    if (this.#scanning) {
      this.#rescanRequested = true;
      return this.#scanning;
    }
    this.#scanning = (async () => {
      do {
        this.#rescanRequested = false;
        await this.#scanOnce();
      } while (this.#rescanRequested && !this.#stopped);
    })().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  #startWatching(): void {
    if (this.#watcher || this.#stopped || this.#opts.watch === false) return;
    try {
      this.#watcher = watch(this.#root, { recursive: true, persistent: false }, () => this.#requestScan(this.#opts.debounceMs ?? 100));
      this.#watcher.on('error', (err) => {
        this.#opts.logger.warn({ err, dir: this.#root }, 'manifest watch failed; relying on periodic rescan');
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch (err) {
      this.#opts.logger.warn({ err, dir: this.#root }, 'cannot watch the manifests dir; relying on periodic rescan');
    }
  }

  /** Trailing debounce with a ceiling, so a directory that never stops changing still publishes. */
  #requestScan(debounceMs: number): void {
    if (this.#stopped) return;
    const now = Date.now();
    if (this.#debounceTimer === undefined) this.#firstPendingChange = now;
    clearTimeout(this.#debounceTimer);
    const ceiling = this.#firstPendingChange + Math.max(10 * debounceMs, 1_000);
    const delay = Math.max(0, Math.min(debounceMs, ceiling - now));
    this.#debounceTimer = setTimeout(() => {
      this.#debounceTimer = undefined;
      this.#startWatching();
      this.rescan().catch((err: unknown) => this.#opts.logger.error({ err }, 'manifest scan failed'));
    }, delay);
  }

  async #scanOnce(): Promise<void> {
    let files: string[];
    try {
      files = await listManifestFiles(this.#root);
    } catch (err) {
      // Keep the previous snapshot: a vanished directory is not evidence that the resources are gone.
      this.#setProblems([{ file: '.', document: -1, path: '', message: `cannot list the manifests dir: ${(err as Error).message}` }]);
      return;
    }
    const parsed = await Promise.all(files.map((file) => this.#parseFile(file)));
    const { resources, problems } = mergeManifests(parsed.filter((p): p is ParsedManifest => p !== undefined));
    this.#setProblems(problems);
    this.#publishIfChanged(resources);
  }

  async #parseFile(file: string): Promise<ParsedManifest | undefined> {
    let text: string;
    try {
      text = await readFile(path.join(this.#root, file), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.#cache.delete(file);
        return undefined;
      }
      return { entries: [], problems: [{ file, document: -1, path: '', message: `cannot read: ${(err as Error).message}` }] };
    }
    const cached = this.#cache.get(file);
    if (cached?.text === text) return cached.parsed;
    const parsed = parseManifest(file, text, this.#opts.validate);
    this.#cache.set(file, { text, parsed });
    return parsed;
  }

  #publishIfChanged(resources: readonly Resource[]): void {
    const generation = (this.#current?.generation ?? 0) + 1;
    const snapshot = buildInputSnapshot({ cluster: this.#opts.cluster, epoch: this.#epoch, generation, resources });
    if (snapshot.hash === this.#current?.hash) return;
    this.#current = snapshot;
    this.#opts.logger.info(
      { cluster: snapshot.cluster, generation, hash: snapshot.hash, resources: resources.length, problems: this.#problems.length },
      'input snapshot built',
    );
    for (const listener of this.#listeners) listener(snapshot);
  }

  #setProblems(problems: readonly InputProblem[]): void {
    const known = new Set(this.#problems.map((p) => JSON.stringify(p)));
    for (const problem of problems) {
      if (!known.has(JSON.stringify(problem))) this.#opts.logger.warn({ cluster: this.#opts.cluster, problem }, `input problem: ${formatInputProblem(problem)}`);
    }
    this.#problems = problems;
  }
}

/** Relative '/'-separated paths of manifest files under root, sorted; dot-entries skipped, symlinks followed. */
export async function listManifestFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const rel = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (rel.split('/').some((segment) => segment.startsWith('.')) || !MANIFEST_FILE.test(entry.name)) continue;
    if (entry.isFile() || (entry.isSymbolicLink() && (await stat(path.join(root, rel)).catch(() => undefined))?.isFile())) files.push(rel);
  }
  return files.sort();
}

/**
 * Joins per-file results, given in sorted file order. When two documents define
 * the same resource the first (by file path, then document index) wins and the
 * other is reported.
 */
export function mergeManifests(parsed: readonly ParsedManifest[]): { resources: Resource[]; problems: InputProblem[] } {
  const seen = new Map<string, ManifestEntry>();
  const problems: InputProblem[] = [];
  for (const manifest of parsed) {
    problems.push(...manifest.problems);
    for (const entry of manifest.entries) {
      const key = formatResourceKey(resourceKey(entry.resource));
      const first = seen.get(key);
      if (first) {
        problems.push({
          file: entry.file,
          document: entry.document,
          path: 'metadata.name',
          message: `duplicate ${key}: already defined in ${first.file} document ${first.document}`,
        });
      } else {
        seen.set(key, entry);
      }
    }
  }
  return { resources: [...seen.values()].map((e) => e.resource), problems: problems.sort(compareInputProblems) };
}
