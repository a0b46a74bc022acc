import { linkSync, readdirSync, rmSync } from 'node:fs';
import { open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LoopSlicer, type Resource } from '@meshrelay/api';
import type { AppliedOutput } from './output-state.ts';
import { runLimited } from './run-limited.ts';
import { yamlDocument } from './yaml-block.ts';

/** Resource files written at once. */
const PARALLEL_WRITES = 64;
/** Buffers per writev call (Linux's IOV_MAX is 1024). */
const IOV_MAX = 1000;
export const SNAPSHOT_FILE = 'snapshot.json';

/** What a version directory holds: the file name and content hash of each resource's file, in output order. */
export interface VersionFiles {
  readonly hash: string;
  readonly names: readonly string[];
  readonly digests: readonly string[];
}

/** A version directory and what it holds. */
export interface VersionDir {
  readonly dir: string;
  readonly files: VersionFiles;
}

export interface VersionBuild {
  readonly output: AppliedOutput;
  /** What the new version holds (its names and content hashes). */
  readonly files: VersionFiles;
  /** The UTF-8 canonical encoding of each resource, in order (snapshot.json is gathered from them). */
  readonly encodings: readonly Buffer[];
  /** The version served now: a resource whose content it holds is a hard link to its file. */
  readonly current?: VersionDir | undefined;
  /**
   * A version no longer served whose directory the caller moved to the build directory (so no
   * reader finds it by its old name): its files that the new version holds unchanged stay, the
   * rest are removed before anything is written under their names (a kept file may be a hard
   * link shared with a served version, which must never be written through).
   */
  readonly recycled?: VersionDir | undefined;
}

/**
 * Fills `dir` with one YAML file per resource plus snapshot.json. Only what the versions at hand
 * do not hold is encoded and written: unchanged files of a recycled directory stay, content the
 * current version holds is hard-linked. YAML is rendered in slices that give the event loop a
 * turn every ~20 ms (a first version of a large output takes a while, which must not hold
 * heartbeats up). Links and removals are synchronous: each is a few microseconds of kernel work,
 * less than the thread-pool round trip and promise of an asynchronous call.
 */
export async function buildVersion(dir: string, build: VersionBuild): Promise<void> {
  const { output, files, current, recycled } = build;
  const slicer = new LoopSlicer();
  const present = recycled ? clearChanged(dir, recycled.files, files) : new Set<number>();
  const linkFrom = current
    ? new Map(current.files.digests.map((d, j) => [d, current.files.names[j] as string]))
    : new Map<string, string>();
  const writes: [string, string][] = [];
  for (let i = 0; i < files.names.length; i++) {
    if (present.has(i)) continue;
    const name = files.names[i] as string;
    const source = linkFrom.get(files.digests[i] as string);
    if (source === undefined || !tryLink(path.join(current?.dir ?? '', source), path.join(dir, name))) {
      writes.push([name, yamlDocument(output.resources[i] as Resource)]);
    }
    if (slicer.due()) await slicer.yield();
  }
  // Rendered first, written after (no write can fail unobserved while the loop takes its turns).
  // 'wx': a name is never written through (a file there could be a link shared with a served version).
  await runLimited(writes, PARALLEL_WRITES, async ([name, text]) =>
    writeFile(path.join(dir, name), text, { flag: 'wx' }),
  );
  await writeSnapshotJson(path.join(dir, SNAPSHOT_FILE), output, build.encodings);
}

/**
 * Removes from a recycled `dir` every entry `next` does not hold unchanged (what `had` lists
 * with another content, snapshot.json, and anything it does not list); gives the indexes (in
 * `next`) of the files kept.
 */
function clearChanged(dir: string, had: VersionFiles, next: VersionFiles): Set<number> {
  const hadDigest = new Map(had.names.map((n, j) => [n, had.digests[j] as string]));
  const index = new Map(next.names.map((n, i) => [n, i]));
  const present = new Set<number>();
  for (const name of readdirSync(dir)) {
    const i = index.get(name);
    if (i !== undefined && hadDigest.get(name) === next.digests[i]) present.add(i);
    else rmSync(path.join(dir, name), { recursive: true, force: true });
  }
  return present;
}

/** Hard-links `source` at `target`; false when the source is gone (the file is then written). */
function tryLink(source: string, target: string): boolean {
  try {
    linkSync(source, target);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * Writes `{ cluster, hash, provenance, resources }` as JSON, the resources in their canonical
 * encoding, gathered by the kernel from `encodings`: nothing is encoded again, joined into one
 * string or converted for the write.
 */
async function writeSnapshotJson(file: string, output: AppliedOutput, encodings: readonly Buffer[]): Promise<void> {
  const { cluster, hash, provenance } = output;
  const head = JSON.stringify({ cluster, hash, provenance });
  const comma = Buffer.from(',');
  const parts: Buffer[] = [Buffer.from(`${head.slice(0, -1)},"resources":[`)];
  encodings.forEach((e, i) => {
    if (i > 0) parts.push(comma);
    parts.push(e);
  });
  parts.push(Buffer.from(']}\n'));
  const handle = await open(file, 'wx');
  try {
    for (let i = 0; i < parts.length; i += IOV_MAX) {
      const chunk = parts.slice(i, i + IOV_MAX);
      const { bytesWritten } = await handle.writev(chunk);
      const size = chunk.reduce((n, b) => n + b.length, 0);
      // A regular file takes a writev whole; should it not, the rest goes as one write.
      if (bytesWritten < size) await handle.write(Buffer.concat(chunk).subarray(bytesWritten));
    }
  } finally {
    await handle.close();
  }
}
