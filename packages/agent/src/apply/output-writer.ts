import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { stringify } from 'yaml';
import { LoopSlicer, prettyJsonArrayInSlices, type Resource } from '@meshrelay/api';
import type { OutputApplier } from './output-applier.ts';
import { checkAppliedOutput, readAppliedOutput, writeAppliedOutput, type AppliedOutput } from './output-state.ts';

export { writeFileAtomic, type AppliedOutput } from './output-state.ts';

export interface OutputWriterOptions {
  readonly cluster: string;
  readonly outputDir: string;
  readonly stateDir: string;
  readonly logger: Logger;
}

const VERSIONS_DIR = '.versions';
const CURRENT_LINK = 'current';
/** Resource files written at once. */
const PARALLEL_WRITES = 64;

/**
 * Writes output snapshots into a directory atomically: every version is written
 * completely under `.versions/<hash>/` and then `current` (a symlink) is swapped
 * to it with one rename, so a reader sees a whole version or the previous one,
 * never a mix. Keeps the current and the previous version. The last applied
 * output is also persisted in the state dir so a restarted agent keeps serving
 * it while the management plane is unreachable. Calls are serialized.
 */
export class FileOutputWriter implements OutputApplier {
  readonly #opts: OutputWriterOptions;
  readonly #outputDir: string;
  #held: AppliedOutput | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: OutputWriterOptions) {
    this.#opts = options;
    this.#outputDir = path.resolve(options.outputDir);
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
      const output = await readAppliedOutput(this.#opts.stateDir, this.#opts.cluster, this.#opts.logger);
      if (!output) return undefined;
      await this.#install(output);
      this.#held = output;
      this.#opts.logger.info({ cluster: output.cluster, hash: output.hash, resources: output.resources.length }, 'restored last applied output');
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
      const checked = await checkAppliedOutput(output, this.#opts.cluster);
      if (checked.hash === this.#held?.hash && (await this.#currentTarget()) === versionLinkTarget(checked.hash)) return false;
      await this.#install(checked);
      await writeAppliedOutput(this.#opts.stateDir, checked);
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

  async #install(output: AppliedOutput): Promise<void> {
    const versions = path.join(this.#outputDir, VERSIONS_DIR);
    await mkdir(versions, { recursive: true });
    const finalDir = path.join(versions, output.hash);
    if (!(await exists(finalDir))) {
      const tmpDir = path.join(versions, `.tmp-${output.hash.slice(0, 12)}-${randomBytes(4).toString('hex')}`);
      await mkdir(tmpDir);
      try {
        await writeVersion(tmpDir, output);
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
    await this.#prune(new Set([output.hash, path.basename(previous ?? '')]));
  }

  async #currentTarget(): Promise<string | undefined> {
    return readlink(this.currentPath).catch(() => undefined);
  }

  async #prune(keep: ReadonlySet<string>): Promise<void> {
    const versions = path.join(this.#outputDir, VERSIONS_DIR);
    for (const name of await readdir(versions)) {
      if (!keep.has(name)) await rm(path.join(versions, name), { recursive: true, force: true });
    }
  }
}

function versionLinkTarget(hash: string): string {
  return path.join(VERSIONS_DIR, hash);
}

/**
 * One `<kind>.<namespace>.<name>.yaml` per resource plus `snapshot.json`. YAML
 * and JSON are rendered in slices that give the event loop a turn every ~20 ms:
 * rendering a large output takes seconds, which must not hold heartbeats up.
 */
async function writeVersion(dir: string, output: AppliedOutput): Promise<void> {
  const slicer = new LoopSlicer();
  const used = new Set<string>();
  const files: [string, string][] = [];
  for (const resource of output.resources) {
    let name = resourceFileName(resource);
    // Same kind and name in two API groups: keep both, the second carries its apiVersion.
    if (used.has(name)) name = `${safe(resource.apiVersion)}.${name}`;
    used.add(name);
    files.push([name, stringify(resource)]);
    if (slicer.due()) await slicer.yield();
  }
  // Rendered first, written after (no write can fail unobserved while the loop takes its turns),
  // a bounded number at a time: thousands of writes at once flood the loop with their completions.
  for (let i = 0; i < files.length; i += PARALLEL_WRITES) {
    await Promise.all(files.slice(i, i + PARALLEL_WRITES).map(([name, text]) => writeFile(path.join(dir, name), text)));
  }
  await writeFile(path.join(dir, 'snapshot.json'), `${await snapshotJson(output, slicer)}\n`);
}

/** JSON.stringify({ cluster, hash, provenance, resources }, null, 2), the resources rendered in slices. */
async function snapshotJson(output: AppliedOutput, slicer: LoopSlicer): Promise<string> {
  const { cluster, hash, provenance } = output;
  const head = JSON.stringify({ cluster, hash, provenance }, null, 2);
  return `${head.slice(0, -2)},\n  "resources": ${await prettyJsonArrayInSlices(output.resources, 2, 1, slicer)}\n}`;
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
