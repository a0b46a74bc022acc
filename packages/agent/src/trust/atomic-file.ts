import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../apply/applied-output-check.ts';

/**
 * Replaces `file` atomically (the apply's writeFileAtomic: temp file, fsync, rename), so a reader such
 * as istiod or gRPC's file_watcher sees the old content or the new, never a part. Makes the directory.
 */
export async function replaceFile(file: string, content: string, mode: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  await writeFileAtomic(file, content, mode);
}

/** The file's text, or undefined when it does not exist. */
export async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
