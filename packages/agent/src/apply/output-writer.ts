import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, readdir, readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { resourceEncoding, resourceId, type Resource } from '@meshrelay/api';
import { AppliedOutputStore } from './applied-output-store.ts';
import type { OutputApplier } from './output-applier.ts';
import { checkAppliedOutput, type AppliedOutput } from './output-state.ts';
import { buildVersion, type VersionDir, type VersionFiles } from './version-dir.ts';

export { writeFileAtomic, type AppliedOutput } from './output-state.ts';

export interface OutputWriterOptions {
  readonly cluster: string;
  readonly outputDir: string;
  readonly stateDir: string;
  readonly logger: Logger;
}

const VERSIONS_DIR = '.versions';
const CURRENT_LINK = 'current';

/**
 * Writes output snapshots into a directory atomically: every version is written
 * completely under `.versions/<hash>/` and then `current` (a symlink) is swapped
 * to it with one rename, so a reader sees a whole version or the previous one,
 * never a mix. Keeps the current and the previous version. A new version
 * costs what changed: files of resources the previous version holds are hard
 * links to its files, only changed resources are encoded as YAML and written.
 * The last applied output is also persisted in the state dir (see
 * AppliedOutputStore: also written at the cost of the change) so a restarted
 * agent keeps serving it while the management plane is unreachable. Calls are serialized.
 */
export class FileOutputWriter implements OutputApplier {
  readonly #opts: OutputWriterOptions;
  readonly #outputDir: string;
  readonly #store: AppliedOutputStore;
  #held: AppliedOutput | undefined;
  /** The version this writer last installed (what `current` serves) and the one before it. */
  #version: VersionFiles | undefined;
  #previous: VersionFiles | undefined;
  /**
   * The UTF-8 canonical encoding of each resource of the held output, by content hash (snapshot.json is gathered from
   * them).
   */
  #encodingByDigest = new Map<string, Buffer>();
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: OutputWriterOptions) {
    this.#opts = options;
    this.#outputDir = path.resolve(options.outputDir);
    this.#store = new AppliedOutputStore(options.stateDir);
  }

  /** Hash of the output currently served ('' if none): what PullHello reports. */
  get heldHash(): string {
    return this.#held?.hash ?? '';
  }

  get held(): AppliedOutput | undefined {
    return this.#held;
  }

  /** Directory `current` points to (a reader should resolve it once per read). */
  get currentPath(): string {
    return path.join(this.#outputDir, CURRENT_LINK);
  }

  /**
   * Loads the last applied output from the state dir and makes `current` serve
   * it again (rewriting the version if the output dir was lost). A missing,
   * corrupt or foreign-cluster state file is logged and ignored.
   */
  restore(): Promise<AppliedOutput | undefined> {
    return this.#serialize(async () => {
      const output = await this.#store.load(this.#opts.cluster, this.#opts.logger);
      if (!output) return undefined;
      await this.#install(output, this.#store.digestsOf(output.resources));
      this.#held = output;
      this.#opts.logger.info(
        { cluster: output.cluster, hash: output.hash, resources: output.resources.length },
        'restored last applied output',
      );
      return output;
    });
  }

  /**
   * Makes `output` the served version. Returns false (and writes nothing) when
   * that hash is already served. Throws MESHRELAY_ERR_INVALID_ARGUMENT when the
   * resources do not hash to `output.hash`; on any failure the previous version
   * stays in place.
   */
  apply(output: AppliedOutput): Promise<boolean> {
    return this.#serialize(async () => {
      const checked = await checkAppliedOutput(output, this.#opts.cluster, this.#held);
      if (checked.hash === this.#held?.hash && (await this.#currentTarget()) === versionLinkTarget(checked.hash))
        return false;
      const digests = this.#store.digestsOf(checked.resources);
      await this.#install(checked, digests);
      await this.#store.save(checked, digests);
      this.#held = checked;
      return true;
    });
  }

  /** Waits for a write in progress; the writer has no background work. */
  async stop(): Promise<void> {
    await this.#queue;
  }

  #serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Writes the version of `output` (`digests`: its resources' content hashes) unless it is there,
   * and makes `current` serve it. The new version is built in a temp directory, from the
   * previous version's directory when there is one (it is about to be pruned anyway: moved
   * first, so no reader finds it by its name while it changes), and renamed into place whole.
   */
  async #install(output: AppliedOutput, digests: readonly string[]): Promise<void> {
    const versions = path.join(this.#outputDir, VERSIONS_DIR);
    await mkdir(versions, { recursive: true });
    const finalDir = path.join(versions, output.hash);
    const files: VersionFiles = { hash: output.hash, names: resourceFileNames(output.resources), digests };
    if (!(await exists(finalDir))) {
      const tmpDir = path.join(versions, `.tmp-${output.hash.slice(0, 12)}-${randomBytes(4).toString('hex')}`);
      const recycled = await this.#claimPrevious(versions, tmpDir, output.hash);
      const current: VersionDir | undefined = this.#version && {
        dir: path.join(versions, this.#version.hash),
        files: this.#version,
      };
      try {
        await buildVersion(tmpDir, { output, files, encodings: this.#encodings(output, digests), current, recycled });
        await rename(tmpDir, finalDir);
      } catch (err) {
        await rm(tmpDir, { recursive: true, force: true });
        if (!(await exists(finalDir))) throw err;
      }
    }
    const previous = await this.#currentTarget();
    if (previous !== versionLinkTarget(output.hash)) {
      const tmpLink = path.join(this.#outputDir, `.${CURRENT_LINK}-${randomBytes(4).toString('hex')}`);
      await symlink(versionLinkTarget(output.hash), tmpLink);
      await rename(tmpLink, this.currentPath);
    }
    this.#previous =
      this.#version?.hash !== output.hash && previous === versionLinkTarget(this.#version?.hash ?? '')
        ? this.#version
        : undefined;
    this.#version = files;
    await this.#prune(new Set([output.hash, path.basename(previous ?? '')]));
  }

  /**
   * Moves the previous version's directory (not served) to `tmpDir` and gives what it holds, or
   * makes `tmpDir` empty when there is none to recycle.
   */
  async #claimPrevious(versions: string, tmpDir: string, hash: string): Promise<VersionDir | undefined> {
    const previous = this.#previous;
    this.#previous = undefined;
    if (previous && previous.hash !== hash && previous.hash !== this.#version?.hash) {
      try {
        await rename(path.join(versions, previous.hash), tmpDir);
        return { dir: tmpDir, files: previous };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    await mkdir(tmpDir);
    return undefined;
  }

  /** The encodings of `output`'s resources, in order; only the held output's are kept afterwards. */
  #encodings(output: AppliedOutput, digests: readonly string[]): Buffer[] {
    const kept = new Map<string, Buffer>();
    const encodings = digests.map((d, i) => {
      const e =
        kept.get(d) ?? this.#encodingByDigest.get(d) ?? Buffer.from(resourceEncoding(output.resources[i] as Resource));
      kept.set(d, e);
      return e;
    });
    this.#encodingByDigest = kept;
    return encodings;
  }

  async #currentTarget(): Promise<string | undefined> {
    return readlink(this.currentPath).catch(() => undefined);
  }

  async #prune(keep: ReadonlySet<string>): Promise<void> {
    const versions = path.join(this.#outputDir, VERSIONS_DIR);
    // Synchronous for the reason links are (see writeVersion): a version is hundreds of entries.
    for (const name of await readdir(versions)) {
      if (!keep.has(name)) rmSync(path.join(versions, name), { recursive: true, force: true });
    }
  }
}

function versionLinkTarget(hash: string): string {
  return path.join(VERSIONS_DIR, hash);
}

/**
 * The file name of each resource of a version, in order: `<kind>.<namespace>.<name>.yaml`, the apiVersion in front for
 * a second kind of that name.
 */
function resourceFileNames(resources: readonly Resource[]): string[] {
  const used = new Set<string>();
  return resources.map((resource) => {
    let name = resourceFileName(resource);
    // Same kind and name in two API groups: keep both, the second carries its apiVersion.
    if (used.has(name)) name = `${safe(resource.apiVersion)}.${name}`;
    // Names that differ only in characters a file name cannot hold map to one name: each
    // further one carries a digest of its key, so no resource's file replaces another's.
    if (used.has(name))
      name = `${name.slice(0, -'.yaml'.length)}.${createHash('sha256').update(resourceId(resource)).digest('hex').slice(0, 16)}.yaml`;
    used.add(name);
    return name;
  });
}

export function resourceFileName(resource: Resource): string {
  const namespace = resource.metadata.namespace ?? '';
  return `${safe(resource.kind)}.${namespace === '' ? '_' : safe(namespace)}.${safe(resource.metadata.name)}.yaml`;
}

function safe(part: string): string {
  return part.replace(/[^A-Za-z0-9._-]/g, '_');
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}
