import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { MAX_RESOURCE_DEPTH, MeshrelayError, buildOutputSnapshotInSlices, isRecord, jsonArrayInSlices, parseWithResourcesLast, type Provenance, type Resource } from '@meshrelay/api';

/** An output snapshot as the agent applies and persists it. */
export interface AppliedOutput {
  readonly cluster: string;
  readonly hash: string;
  readonly provenance: readonly Provenance[];
  readonly resources: readonly Resource[];
}

const STATE_FILE = 'last-output.json';

/**
 * Persists the last applied output in the state dir (every applier uses it), so
 * a restarted agent keeps serving that output while the management plane is
 * unreachable.
 */
export async function writeAppliedOutput(stateDir: string, output: AppliedOutput): Promise<void> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  // JSON.stringify(output), with the large resource list encoded in slices (event loop stays free).
  const head = JSON.stringify({ cluster: output.cluster, hash: output.hash, provenance: output.provenance });
  await writeFileAtomic(path.join(stateDir, STATE_FILE), `${head.slice(0, -1)},"resources":${await jsonArrayInSlices(output.resources)}}`);
}

/**
 * Reads the persisted output back, re-checking its hash and cluster. A missing,
 * corrupt or foreign-cluster state file is logged and gives undefined.
 */
export async function readAppliedOutput(stateDir: string, cluster: string, logger: Logger): Promise<AppliedOutput | undefined> {
  const file = path.join(stateDir, STATE_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn({ err, file }, 'cannot read the last applied output');
    return undefined;
  }
  try {
    // The resources (the bulk) are parsed a resource at a time: a large output does not hold the event loop.
    const parsed = await parseWithResourcesLast(text, { maxResources: Number.MAX_SAFE_INTEGER, maxDepth: MAX_RESOURCE_DEPTH });
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
 * Encodes in slices, so a large output does not hold the agent's heartbeats up.
 */
export async function checkAppliedOutput(output: AppliedOutput, cluster: string): Promise<AppliedOutput> {
  if (output.cluster !== cluster) {
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `output is for cluster "${output.cluster}", this agent serves "${cluster}"`);
  }
  const built = await buildOutputSnapshotInSlices({ cluster, resources: output.resources, provenance: output.provenance ?? [] });
  if (built.hash !== output.hash) {
    throw new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH', `output resources hash to ${built.hash}, not ${output.hash}`);
  }
  return { cluster, hash: built.hash, provenance: built.provenance, resources: built.resources };
}

/** Writes a 0600 file through a temp file + fsync + rename, so readers see the old or the new content. */
export async function writeFileAtomic(file: string, content: string): Promise<void> {
  const tmp = `${file}.tmp-${randomBytes(4).toString('hex')}`;
  const handle = await open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(content);
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
