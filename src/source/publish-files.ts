/** File helpers of `publish`: an atomic copy, and whether a file still has a recorded content. */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { copyFile, rename } from 'node:fs/promises';
import type { Hashes } from '../node/inventory.js';

/** Copies a file through a temporary file and a rename, so that readers see the old or the new copy. */
export async function copyAtomic(from: string, to: string): Promise<void> {
  const tmp = `${to}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await copyFile(from, tmp);
    await rename(tmp, to);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Whether `file` still has the recorded size (and, up to 16 MiB, the recorded MD5). */
export function sameFile(file: string, c: { size?: number; hashes?: Hashes }): boolean {
  try {
    const st = statSync(file);
    if (st.size !== c.size) return false;
    if (c.hashes?.md5 === undefined) return true;
    // small check by content; large files are compared while zipping (the md5 of each bitstream is verified)
    return st.size > 16 * 1024 * 1024 || md5File(file) === c.hashes.md5;
  } catch {
    return false;
  }
}

function md5File(file: string): string {
  return createHash('md5').update(readFileSync(file)).digest('hex');
}
