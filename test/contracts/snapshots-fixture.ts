/** The fixture of the `SourceSnapshots` contract (test/contracts/source-snapshots.ts) and its helpers. */
import { createHash } from 'node:crypto';
import type { InventoryEntry } from '../../src/node/inventory.js';
import type { SourceSnapshots } from '../../src/source/source-snapshots.js';

/** One implementation under test: a fresh, empty set's snapshots, and a way to open them again. */
export interface SnapshotsFixture {
  impl: SourceSnapshots;
  /** Another instance over the same history (another process or machine would see the same). */
  openAgain: () => Promise<SourceSnapshots>;
  /** Closes what is left and removes the storage. */
  cleanup: () => Promise<void>;
}

export type MakeSnapshots = () => Promise<SnapshotsFixture>;

/** An inventory entry of a file holding `content`. */
export function entry(path: string, content: string, mtimeMs = 1_700_000_000_000): InventoryEntry {
  return { path, size: Buffer.byteLength(content), mtimeMs, type: 'text/plain', hashes: { md5: createHash('md5').update(content).digest('hex') } };
}

/** A clock that gives `start`, `start + step`, … */
export function steps(start: number, step = 1000): () => number {
  let t = start - step;
  return () => (t += step);
}

/** Runs `body` with a fresh implementation, cleaning up whatever happens. */
export async function using(make: MakeSnapshots, body: (fixture: SnapshotsFixture) => Promise<void>): Promise<void> {
  const fixture = await make();
  try {
    await body(fixture);
  } finally {
    await fixture.impl.close();
    await fixture.cleanup();
  }
}
