import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

/**
 * A non-recursive watch on each directory that holds a manifest, beside the provider's recursive
 * one. Node's recursive watch on Linux follows files by inode: once a manifest is replaced by a
 * file renamed in from another directory, it watches the replaced inode and later replacements
 * go unseen until the periodic rescan. A directory's own watch reports every entry renamed into it.
 */
export class DirectoryWatchers {
  readonly #root: string;
  readonly #onEvent: (rel: string | undefined) => void;
  readonly #logger: Logger;
  readonly #watchers = new Map<string, FSWatcher>();

  /** `onEvent` gets the path of the entry, relative to `root` with `/`, or undefined when the watch gave none. */
  constructor(root: string, onEvent: (rel: string | undefined) => void, logger: Logger) {
    this.#root = root;
    this.#onEvent = onEvent;
    this.#logger = logger;
  }

  /** Watches exactly `dirs` (relative, '' = the root); true when a directory was added. */
  update(dirs: Iterable<string>): boolean {
    const wanted = new Set(dirs);
    for (const [dir, watcher] of this.#watchers) {
      if (wanted.has(dir)) continue;
      watcher.close();
      this.#watchers.delete(dir);
    }
    let added = false;
    for (const dir of wanted) {
      if (this.#watchers.has(dir)) continue;
      added = this.#watch(dir) || added;
    }
    return added;
  }

  close(): void {
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
  }

  #watch(dir: string): boolean {
    const abs = dir === '' ? this.#root : path.join(this.#root, dir);
    try {
      const watcher = watch(abs, { persistent: false }, (_event, filename) => {
        const name = typeof filename === 'string' ? filename : undefined;
        this.#onEvent(name === undefined ? undefined : dir === '' ? name : `${dir}/${name}`);
      });
      watcher.on('error', (err) => {
        // A directory that went away: the next scan decides what is left; the periodic rescan covers the rest.
        this.#logger.debug({ err, dir: abs }, 'directory watch ended');
        watcher.close();
        this.#watchers.delete(dir);
        this.#onEvent(undefined);
      });
      this.#watchers.set(dir, watcher);
      return true;
    } catch (err) {
      this.#logger.debug(
        { err, dir: abs },
        'cannot watch a manifests directory; the recursive watch and the rescan cover it',
      );
      return false;
    }
  }
}
