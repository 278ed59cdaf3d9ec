/** The records and options of the inventory of a directory (src/node/inventory.ts, src/node/file-reader.ts). */
import type { HashAlgorithm } from '../core/constants.js';

/** Fixity values by algorithm, lower-case hex. */
export type Hashes = Partial<Record<HashAlgorithm, string>>;

/** One published file. */
export interface InventoryEntry {
  /** Relative path, `/`-separated, never hidden. */
  path: string;
  /** Length in bytes ({@link NO_LENGTH} when not known). */
  size: number;
  /** Last modification, milliseconds since the epoch (as `fs.Stats.mtimeMs`; {@link NO_LASTMOD} when not known). */
  mtimeMs: number;
  /** Media type from the extension ('' when not known). */
  type: string;
  hashes: Hashes;
}

/** What a previous snapshot knew of a file. */
export interface PreviousState {
  size: number;
  mtimeMs: number;
  hashes: Hashes;
}

/** Progress of an inventory. */
export interface InventoryProgress {
  files: number;
  bytes: number;
  /** Files whose content was read and hashed (the others were unchanged since the previous snapshot). */
  hashed: number;
}

export interface InventoryOptions {
  /** Fixity algorithms; default `['md5']`. An empty list reads no content. */
  hashes?: readonly HashAlgorithm[];
  /**
   * Previous state of a path; called in inventory order (so a store may answer with a forward cursor). A
   * promise is awaited; a value answered at once is used at once.
   */
  previous?: (path: string) => PreviousState | undefined | Promise<PreviousState | undefined>;
  signal?: AbortSignal;
  /** Called after each batch. */
  onProgress?: (p: InventoryProgress) => void;
  /** Files up to this size are read with one synchronous call; default 256 KiB. */
  smallFileLimit?: number;
  /** Files handled between two yields to the event loop; default 512. */
  batchSize?: number;
  /** Media type of a path; default `mediaType` from the extension table. */
  mediaType?: (path: string) => string;
  /** Absolute paths (files or folders) never published, e.g. a publish folder or state folder inside the tree. */
  exclude?: readonly string[];
  /**
   * Files published with other bytes than they hold (an HTML page given its discovery link, §6.3.3): for a
   * path, the function from the stored to the published bytes, or undefined for a file published as stored.
   * A file it applies to, when at most `rewriteLimit` bytes, is read whole, and its length and hashes are
   * those of the published bytes; its previous hashes are never reused (its size on disk is not the listed one).
   */
  rewrite?: (path: string) => ((stored: Buffer) => Uint8Array) | undefined;
  /** Largest file `rewrite` is applied to; default 1 MiB. */
  rewriteLimit?: number;
  /**
   * What a watcher knows of a file (relative path): true while it is being written (not settled), to keep
   * what the previous snapshot knew of it (size, mtime, hashes; a file it did not know is left out), so that
   * no half-written content is listed (its next inventory reads it); false once it has settled (read as it
   * is); undefined when the watcher knows nothing of it lately (`settleMs` applies).
   */
  hold?: (path: string) => boolean | undefined;
  /**
   * A file modified less than this long (ms) before it is read, that `hold` says nothing of, is held as
   * `hold` holds it: a write that began before a watcher heard of it is not read half-done. (A modification
   * time more than a second in the future is not taken for a write in progress.) Default 0.
   */
  settleMs?: number;
  /**
   * Called for each file or folder of the walk left out because its name cannot be published (a control
   * character such as a newline, CR or tab, a backslash, or bytes that are not UTF-8), with its relative path
   * (undecodable bytes shown as U+FFFD). Hidden names are left out without a call.
   */
  onUnpublishable?: (path: string) => void;
}

/**
 * `InventoryEntry.mtimeMs` of a resource whose last modification is not known (a feed record without `lastmod`):
 * the earliest time a `Date` holds, which no W3C datetime (years 0000–9999) can name. Documents leave `lastmod` out.
 */
export const NO_LASTMOD = -8.64e15;

/** `InventoryEntry.size` of a resource whose length is not known (a feed record without `length`). */
export const NO_LENGTH = -1;
