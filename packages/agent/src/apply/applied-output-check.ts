import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import {
  MAX_RESOURCE_DEPTH,
  MeshrelayError,
  buildOutputSnapshot,
  buildOutputSnapshotInSlices,
  isRecord,
  parseWithResourcesLast,
  type OutputSnapshot,
  type Provenance,
  type Resource,
} from '@meshrelay/api';

/** An output snapshot as the agent applies and persists it. */
export interface AppliedOutput {
  readonly cluster: string;
  readonly hash: string;
  readonly provenance: readonly Provenance[];
  readonly resources: readonly Resource[];
}

/** The whole-output state file of earlier releases, still read when no manifest is there. */
export const LEGACY_STATE_FILE = 'last-output.json';

/** The output of an earlier release's whole-output state file, if there is one (checked like any other). */
export async function readLegacyAppliedOutput(
  stateDir: string,
  cluster: string,
  logger: Logger,
): Promise<AppliedOutput | undefined> {
  const file = path.join(stateDir, LEGACY_STATE_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      logger.warn({ err, file }, 'cannot read the last applied output');
    return undefined;
  }
  try {
    // The resources (the bulk) are parsed a resource at a time: a large output does not hold the event loop.
    const parsed = await parseWithResourcesLast(text, {
      maxResources: Number.MAX_SAFE_INTEGER,
      maxDepth: MAX_RESOURCE_DEPTH,
    });
    if (!isRecord(parsed) || !Array.isArray(parsed['resources']) || typeof parsed['hash'] !== 'string') {
      throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE', 'not an output snapshot');
    }
    return await checkAppliedOutput(parsed as unknown as AppliedOutput, cluster);
  } catch (err) {
    logger.warn({ err, file }, 'ignoring the persisted last output: it is corrupt or not for this cluster');
    return undefined;
  }
}

/**
 * Re-derives the hash from the resources so nothing unverified is ever served.
 * Throws MESHRELAY_ERR_INVALID_ARGUMENT for another cluster's output and
 * MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH when the resources do not hash to `hash`.
 * Without `previous` it encodes in slices, so a large output does not hold the agent's
 * heartbeats up. `previous` is an output this function returned before (the one held): the
 * hash then resumes from where the two first differ (the same frozen resources hash alike), so
 * a one-resource change re-hashes the output from that resource on, not from its start.
 */
export async function checkAppliedOutput(
  output: AppliedOutput,
  cluster: string,
  previous?: AppliedOutput,
): Promise<AppliedOutput> {
  if (output.cluster !== cluster) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `output is for cluster "${output.cluster}", this agent serves "${cluster}"`,
    );
  }
  const init = { cluster, resources: output.resources, provenance: output.provenance ?? [] };
  // Only `resources` of the earlier snapshot is read (for its hash checkpoints).
  const built =
    previous !== undefined
      ? buildOutputSnapshot(init, { ...previous, bytes: 0 } as OutputSnapshot)
      : await buildOutputSnapshotInSlices(init);
  if (built.hash !== output.hash) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
      `output resources hash to ${built.hash}, not ${output.hash}`,
    );
  }
  return { cluster, hash: built.hash, provenance: built.provenance, resources: built.resources };
}

/**
 * Writes a file (0600 unless `mode` says otherwise) through a temp file + fsync + rename, so readers
 * see the old or the new content, never a part.
 */
export async function writeFileAtomic(file: string, content: string, mode = 0o600): Promise<void> {
  const tmp = `${file}.tmp-${randomBytes(4).toString('hex')}`;
  const handle = await open(tmp, 'w', mode);
  try {
    await handle.writeFile(content);
    // Exactly `mode`, whatever the umask took from it at open.
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Makes `dir` (0700) and lists what it holds. */
export async function ensureDir(dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return readdir(dir);
}
