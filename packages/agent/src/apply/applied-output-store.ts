import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { MeshrelayError, isRecord, resourceEncoding, sha256Hex, type Provenance, type Resource } from '@meshrelay/api';
import {
  LEGACY_STATE_FILE,
  checkAppliedOutput,
  ensureDir,
  readLegacyAppliedOutput,
  writeFileAtomic,
  type AppliedOutput,
} from './applied-output-check.ts';
import { runLimited } from './run-limited.ts';

/** The manifest of the last applied output: cluster, hash, provenance and its resources' content hashes in order. */
export const MANIFEST_FILE = 'applied-output.json';
/** One file per resource content, named by the sha256 of its canonical encoding. */
export const RESOURCES_DIR = 'resources';
const CONTENT_FILE = /^[0-9a-f]{64}\.json$/;
/** Files written or read at once. */
const PARALLEL_FILES = 32;

interface Manifest {
  readonly cluster: string;
  readonly hash: string;
  readonly provenance: readonly Provenance[];
  readonly resources: readonly string[];
}

/**
 * The last applied output in the state dir, written at the cost of the change: one file per
 * resource content (`resources/<sha256>.json`, its canonical encoding, written once) and a small
 * manifest naming them. Saving writes the resource files the output adds, then replaces the
 * manifest atomically (temp file, fsync, rename), then deletes files no manifest names. A crash
 * at any step leaves the previous manifest and every file it names in place (a file is deleted
 * only once no manifest names it), so the previous output loads whole.
 *
 * Keeps the content hash of each resource of the output last saved or loaded, by object: a
 * later output holding the same frozen resources does not hash them again. Not safe for
 * concurrent calls (an applier serializes its own).
 */
export class AppliedOutputStore {
  readonly #dir: string;
  readonly #contentDir: string;
  #digests = new Map<Resource, string>();
  /** Content files known to be in the resources dir (what the last save or load found or wrote). */
  #stored: Set<string> | undefined;
  /** Whether an earlier release's whole-output file may still be there (removed by the first save). */
  #legacyMayExist = true;

  constructor(stateDir: string) {
    this.#dir = stateDir;
    this.#contentDir = path.join(stateDir, RESOURCES_DIR);
  }

  /** The content hash (sha256 of the canonical encoding) of each resource of `resources`, in order. */
  digestsOf(resources: readonly Resource[]): string[] {
    return resources.map((r) => this.#digests.get(r) ?? sha256Hex(resourceEncoding(r)));
  }

  /** The content hash the last saved or loaded output holds for `resource` (the same object), if any. */
  knownDigest(resource: Resource): string | undefined {
    return this.#digests.get(resource);
  }

  /**
   * Persists `output` (a checked output: its resources canonical) as the last applied one.
   * `digests` are its resources' content hashes when the caller has them. Returns how many
   * resource files were written. On failure the previous state stays loadable.
   */
  async save(output: AppliedOutput, digests = this.digestsOf(output.resources)): Promise<number> {
    const stored =
      this.#stored ??
      new Set((await ensureDir(this.#contentDir)).filter((f) => CONTENT_FILE.test(f)).map((f) => f.slice(0, 64)));
    this.#stored = stored;
    const missing = new Map<string, Resource>();
    digests.forEach((d, i) => {
      if (!stored.has(d)) missing.set(d, output.resources[i] as Resource);
    });
    await runLimited([...missing], PARALLEL_FILES, async ([d, r]) => {
      await writeFileAtomic(this.#contentFile(d), resourceEncoding(r));
      stored.add(d);
    });
    const manifest: Manifest = {
      cluster: output.cluster,
      hash: output.hash,
      provenance: output.provenance,
      resources: digests,
    };
    await writeFileAtomic(path.join(this.#dir, MANIFEST_FILE), JSON.stringify(manifest));
    this.#digests = new Map(output.resources.map((r, i) => [r, digests[i] as string]));
    await this.#collect(new Set(digests));
    return missing.size;
  }

  /**
   * The persisted output, re-checked (each file against its name, the output against its hash
   * and cluster); an earlier release's whole-output file when there is no manifest. Missing,
   * corrupt or foreign-cluster state is logged and gives undefined.
   */
  async load(cluster: string, logger: Logger): Promise<AppliedOutput | undefined> {
    const file = path.join(this.#dir, MANIFEST_FILE);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        logger.warn({ err, file }, 'cannot read the last applied output');
      return this.#adopt(await readLegacyAppliedOutput(this.#dir, cluster, logger));
    }
    try {
      const manifest = parseManifest(text);
      const resources: Resource[] = new Array<Resource>(manifest.resources.length);
      await runLimited([...manifest.resources.keys()], PARALLEL_FILES, async (i) => {
        resources[i] = await this.#readContent(manifest.resources[i] as string);
      });
      return this.#adopt(await checkAppliedOutput({ ...manifest, resources }, cluster));
    } catch (err) {
      logger.warn({ err, file }, 'ignoring the persisted last output: it is corrupt or not for this cluster');
      return undefined;
    }
  }

  #adopt(output: AppliedOutput | undefined): AppliedOutput | undefined {
    this.#digests = new Map();
    if (output) {
      const digests = this.digestsOf(output.resources);
      this.#digests = new Map(output.resources.map((r, i) => [r, digests[i] as string]));
    }
    return output;
  }

  async #readContent(digest: string): Promise<Resource> {
    const text = await readFile(this.#contentFile(digest), 'utf8');
    if (sha256Hex(text) !== digest)
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
        `state file ${digest}.json does not hold the content it is named by`,
      );
    return JSON.parse(text) as Resource;
  }

  /**
   * Deletes content files (and the earlier release's whole-output file) that the manifest just written does not name.
   */
  async #collect(keep: ReadonlySet<string>): Promise<void> {
    const stored = this.#stored as Set<string>;
    const stale = [...stored].filter((d) => !keep.has(d));
    await runLimited(stale, PARALLEL_FILES, async (d) => {
      await rm(this.#contentFile(d), { force: true });
      stored.delete(d);
    });
    if (this.#legacyMayExist) await rm(path.join(this.#dir, LEGACY_STATE_FILE), { force: true });
    this.#legacyMayExist = false;
  }

  #contentFile(digest: string): string {
    return path.join(this.#contentDir, `${digest}.json`);
  }
}

function parseManifest(text: string): Manifest {
  const parsed: unknown = JSON.parse(text);
  if (
    !isRecord(parsed) ||
    typeof parsed['cluster'] !== 'string' ||
    typeof parsed['hash'] !== 'string' ||
    !Array.isArray(parsed['provenance']) ||
    !Array.isArray(parsed['resources']) ||
    !parsed['resources'].every((d) => typeof d === 'string' && /^[0-9a-f]{64}$/.test(d))
  ) {
    throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', 'the applied-output manifest is not one');
  }
  return parsed as unknown as Manifest;
}
