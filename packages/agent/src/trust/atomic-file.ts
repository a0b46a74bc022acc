import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Replaces `file` through a temp file in the same directory (fsync, then rename), so a reader such as
 * istiod or gRPC's file_watcher sees the old content or the new, never a part. Makes the directory.
 */
export async function replaceFile(file: string, content: string, mode: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${randomBytes(4).toString('hex')}`);
  const handle = await open(tmp, 'w', mode);
  try {
    await handle.writeFile(content);
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

/** The file's text, or undefined when it does not exist. */
export async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
