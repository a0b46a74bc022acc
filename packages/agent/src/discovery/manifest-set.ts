import path from 'node:path';
import type { InputProblem } from './input-problem.ts';
import type { ManifestEntry, ParsedManifest, ResourceValidator } from './manifest-parser.ts';
import {
  listManifestFiles,
  readManifest,
  statManifest,
  wholeFileProblem,
  type ManifestLimits,
  type ManifestStat,
} from './manifest-reader.ts';
import { mergeManifests } from './manifest-snapshot.ts';

/** What the set knows of one manifest file. */
interface FileState {
  /** Signature of the last stat (see statManifest). */
  signature: string;
  /** Size at the last stat (0 when refused). */
  size: number;
  /** Signature the file had when it was last read; undefined = must be read (again) before use. */
  readSignature: string | undefined;
  /** Resources of the last read that gave any (a file that turns unreadable keeps them). */
  entries: readonly ManifestEntry[];
  /** Problems of the latest stat or read. */
  problems: readonly InputProblem[];
  /** Why the file is not read now (a stat-time refusal), if it is not. */
  refusal: string | undefined;
}

export interface ManifestSetOptions {
  readonly root: string;
  /** realpath of root, for the symlink containment check. */
  readonly realRoot: string;
  readonly validate: ResourceValidator;
  readonly limits: ManifestLimits;
}

/** What one sync found: whether anything that goes into a snapshot changed. */
export interface SyncResult {
  readonly changed: boolean;
}

/** How many stats run at once in a full sync. */
const STAT_CONCURRENCY = 16;

/**
 * The parsed content of a manifests dir, kept per file and brought up to date
 * from stats: a file is read (and parsed) only when its signature changed, so
 * a sync of an unchanged dir reads nothing, and one edited file costs one read.
 * A file that becomes unreadable, too large, not UTF-8 or unparseable as a
 * whole keeps its last good resources and reports why (the previous good state
 * stays); a deleted file takes its resources with it. Not safe for concurrent
 * syncs: the caller serializes them.
 */
export class ManifestSet {
  readonly #opts: ManifestSetOptions;
  readonly #files = new Map<string, FileState>();
  #reads = 0;

  constructor(options: ManifestSetOptions) {
    this.#opts = options;
  }

  /** Files read since construction (a file read twice counts twice). */
  get reads(): number {
    return this.#reads;
  }

  /**
   * Lists the whole dir, stats every manifest, and reads the changed ones.
   * Throws when the dir cannot be listed (the caller keeps its snapshot).
   */
  async syncAll(): Promise<SyncResult> {
    const listed = await listManifestFiles(this.#opts.root);
    const present = new Set(listed);
    let changed = false;
    for (const rel of [...this.#files.keys()]) {
      if (!present.has(rel)) changed = this.#files.delete(rel) || changed;
    }
    for (let i = 0; i < listed.length; i += STAT_CONCURRENCY) {
      const batch = listed.slice(i, i + STAT_CONCURRENCY);
      const stats = await Promise.all(batch.map((rel) => this.#stat(rel)));
      batch.forEach((rel, j) => {
        changed = this.#applyStat(rel, stats[j] as ManifestStat) || changed;
      });
    }
    return { changed: (await this.#admitAndRead()) || changed };
  }

  /** Stats only the given manifest paths (from watch events) and reads those that changed. */
  async syncPaths(paths: Iterable<string>): Promise<SyncResult> {
    let changed = false;
    for (const rel of paths) changed = this.#applyStat(rel, await this.#stat(rel)) || changed;
    return { changed: (await this.#admitAndRead()) || changed };
  }

  /** The directories (relative, '' = the root) holding the manifests known now, and their parents. */
  directories(): string[] {
    const dirs = new Set<string>(['']);
    for (const rel of this.#files.keys()) {
      for (let dir = path.posix.dirname(rel); dir !== '.' && !dirs.has(dir); dir = path.posix.dirname(dir))
        dirs.add(dir);
    }
    return [...dirs].sort();
  }

  /** The winning entries and every problem, merged in path order (see mergeManifests). */
  merged(): { entries: ManifestEntry[]; problems: InputProblem[] } {
    const parsed: ParsedManifest[] = [...this.#files.keys()].sort().map((rel) => this.#files.get(rel) as FileState);
    return mergeManifests(parsed);
  }

  #stat(rel: string): Promise<ManifestStat> {
    return statManifest(this.#opts.root, this.#opts.realRoot, rel, this.#opts.limits);
  }

  /** Records one stat; true when the snapshot's inputs changed (a file left, or a refusal appeared or changed). */
  #applyStat(rel: string, stat: ManifestStat): boolean {
    const state = this.#files.get(rel);
    if (stat.kind === 'gone') return this.#files.delete(rel);
    if (stat.kind === 'refused') {
      if (state?.signature === stat.signature && state.refusal === stat.message) return false;
      this.#files.set(rel, {
        ...emptyState(state),
        signature: stat.signature,
        refusal: stat.message,
        problems: [wholeFileProblem(rel, stat.message)],
        readSignature: undefined,
      });
      return true;
    }
    if (state === undefined) {
      this.#files.set(rel, { ...emptyState(undefined), signature: stat.signature, size: stat.size });
      return false;
    }
    state.signature = stat.signature;
    state.size = stat.size;
    if (state.refusal === undefined) return false;
    state.refusal = undefined;
    return true;
  }

  /**
   * Applies the total-size limit in path order (files past it are refused
   * unread), then reads, one at a time, every admitted file whose signature
   * changed since its last read. True when anything changed.
   */
  async #admitAndRead(): Promise<boolean> {
    const { maxTotalBytes } = this.#opts.limits;
    let total = 0;
    let changed = false;
    for (const rel of [...this.#files.keys()].sort()) {
      const state = this.#files.get(rel) as FileState;
      if (state.refusal !== undefined) continue;
      total += state.size;
      if (total > maxTotalBytes) {
        changed = this.#refuseForBudget(rel, state, maxTotalBytes) || changed;
        continue;
      }
      if (state.readSignature === state.signature) continue;
      changed = (await this.#read(rel, state)) || changed;
    }
    return changed;
  }

  #refuseForBudget(rel: string, state: FileState, limit: number): boolean {
    const message = `would take the manifests dir past the limit of ${limit} bytes in total (--max-manifests-bytes); not read`;
    if (state.problems.length === 1 && state.problems[0]?.message === message) return false;
    state.problems = [wholeFileProblem(rel, message)];
    state.readSignature = undefined;
    return true;
  }

  async #read(rel: string, state: FileState): Promise<boolean> {
    const signature = state.signature;
    this.#reads++;
    const parsed = await readManifest(this.#opts.root, rel, this.#opts.validate, this.#opts.limits);
    if (parsed === undefined) return this.#files.delete(rel);
    state.readSignature = signature;
    state.problems = parsed.problems;
    // An unreadable whole file (no document read at all) keeps the resources of its last good read.
    if (!(parsed.entries.length === 0 && parsed.problems.some((p) => p.document === -1)))
      state.entries = parsed.entries;
    return true;
  }
}

function emptyState(previous: FileState | undefined): FileState {
  return {
    signature: '',
    size: 0,
    readSignature: undefined,
    entries: previous?.entries ?? [],
    problems: [],
    refusal: undefined,
  };
}
