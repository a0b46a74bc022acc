import { lstat, open, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { InputProblem } from './input-problem.ts';
import { parseManifest, type ParsedManifest, type ResourceValidator } from './manifest-parser.ts';

/**
 * What the file provider accepts from its directory (flags --max-manifest-file-bytes, --max-manifests-bytes,
 * --follow-external-symlinks).
 */
export interface ManifestLimits {
  /** Largest manifest file read; a larger one is refused before it is read. */
  readonly maxFileBytes: number;
  /** Largest total of manifest file sizes; files past it (in path order) are refused before they are read. */
  readonly maxTotalBytes: number;
  /** Follow symbolic links whose target lies outside the manifests dir (default false: refuse them). */
  readonly followExternalSymlinks: boolean;
}

/** 8 MiB: one file may hold a whole tier M cluster (12 k resources, ~6 MB of YAML). */
export const DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024;
/** 64 MiB: about nine tier M clusters of YAML; bounds what one scan reads. */
export const DEFAULT_MAX_TOTAL_BYTES = 64 * 1024 * 1024;

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

/** What stat says about one manifest path: a readable file, or why it is not read. */
export type ManifestStat =
  | { readonly kind: 'file'; readonly signature: string; readonly size: number }
  | { readonly kind: 'gone' }
  | { readonly kind: 'refused'; readonly signature: string; readonly message: string };

/** Whether a relative path names a manifest file the provider considers (no dot-segment, a YAML/JSON name). */
export function isManifestPath(rel: string): boolean {
  return MANIFEST_FILE.test(rel) && !rel.split('/').some((segment) => segment === '' || segment.startsWith('.'));
}

/** Relative '/'-separated paths of manifest files (and symlinks to them) under root, sorted; dot-entries skipped. */
export async function listManifestFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const rel = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (isManifestPath(rel) && (entry.isFile() || entry.isSymbolicLink())) files.push(rel);
  }
  return files.sort();
}

/**
 * Stats one manifest path without reading it. The signature (device, inode,
 * size, mtime, ctime of what the path leads to) changes whenever the content
 * may have; equal signatures mean the file need not be read again. A symbolic
 * link that leads outside `realRoot` is refused unless the limits allow it; a
 * path that is not (or no longer) a regular file is `gone`.
 */
export async function statManifest(
  root: string,
  realRoot: string,
  rel: string,
  limits: ManifestLimits,
): Promise<ManifestStat> {
  const full = path.join(root, rel);
  try {
    const link = await lstat(full);
    const info = link.isSymbolicLink() ? await stat(full) : link;
    if (!info.isFile()) return { kind: 'gone' };
    const signature = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
    if (link.isSymbolicLink() && !limits.followExternalSymlinks && !isInside(realRoot, await realpath(full))) {
      return {
        kind: 'refused',
        signature,
        message:
          'is a symbolic link that leads outside the manifests dir; not followed (see --follow-external-symlinks)',
      };
    }
    if (info.size > limits.maxFileBytes)
      return { kind: 'refused', signature, message: tooLargeMessage(limits.maxFileBytes) };
    return { kind: 'file', signature, size: info.size };
  } catch (err) {
    if (isGone(err)) return { kind: 'gone' };
    return {
      kind: 'refused',
      signature: `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`,
      message: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
}

/**
 * Reads and parses one manifest file of at most `maxFileBytes` (checked again
 * while reading, in case it grew since stat). Text must be valid UTF-8: bytes
 * that are not are an error, never replaced. Returns `undefined` when the file
 * vanished meanwhile. Problems name the file and never quote its content.
 */
export async function readManifest(
  root: string,
  rel: string,
  validate: ResourceValidator,
  limits: ManifestLimits,
): Promise<ParsedManifest | undefined> {
  const refused = (message: string): ParsedManifest => ({ entries: [], problems: [wholeFileProblem(rel, message)] });
  let bytes: Buffer;
  try {
    const read = await readBounded(path.join(root, rel), limits.maxFileBytes);
    if (read === 'too-large') return refused(tooLargeMessage(limits.maxFileBytes));
    bytes = read;
  } catch (err) {
    if (isGone(err)) return undefined;
    return refused(`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return refused('is not valid UTF-8 text');
  }
  return parseManifest(rel, text, validate);
}

export function tooLargeMessage(limit: number): string {
  return `is larger than the limit of ${limit} bytes per file (--max-manifest-file-bytes); not read`;
}

export function wholeFileProblem(file: string, message: string): InputProblem {
  return { file, document: -1, path: '', message };
}

async function readBounded(file: string, limit: number): Promise<Buffer | 'too-large'> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size > limit) return 'too-large';
    // Read until EOF; a file that grew past the limit since stat is refused all the same.
    let buffer = Buffer.allocUnsafe(size + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > limit) return 'too-large';
        const bigger = Buffer.allocUnsafe(Math.min(2 * buffer.length, limit + 1));
        buffer.copy(bigger, 0, 0, length);
        buffer = bigger;
      }
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) return length > limit ? 'too-large' : buffer.subarray(0, length);
      length += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

function isGone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
