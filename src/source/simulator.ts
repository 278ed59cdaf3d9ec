/**
 * A simulated Source's activity: a seeded, reproducible sequence of resource changes (created, updated,
 * deleted) applied to a directory, each one atomically (temporary file, then rename), so that a Source
 * publishing the directory (see `publish`) and a Destination reading it never see a half-written resource.
 * The same seed, resource count, mix and size always give the same changes with the same bytes.
 * @see Z39.99 §12 (Change List: created, updated, deleted)
 */
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { writeFileAtomic } from '../node/file-sink.js';

/** The kinds of change a Change List records. @see Z39.99 §12.1 */
export type SimulatedChangeKind = 'created' | 'updated' | 'deleted';

/** Options of `ChangeSimulator`. */
export interface SimulatorOptions {
  /** Resources present at the start. */
  resources: number;
  /** Relative weights of created, updated and deleted changes, e.g. `[1, 3, 1]`. At least one is positive. */
  mix: readonly [number, number, number];
  /** Bytes of each resource. */
  size: number;
  /** Seed of the pseudo-random sequence (32-bit unsigned). */
  seed: number;
}

/** One change, with the bytes the resource has after it (none once deleted). */
export interface SimulatedChange {
  /** 1 for the first change after the initial resources, then 2, 3, … */
  seq: number;
  change: SimulatedChangeKind;
  /** Path relative to the directory, `/`-separated. */
  path: string;
  /** Content after the change; undefined for `deleted`. */
  bytes?: Buffer;
}

/** The most resources a simulator holds (the live set is an in-memory array of ids). */
export const MAX_SIMULATED_RESOURCES = 10_000_000;
/** The largest simulated resource. */
export const MAX_SIMULATED_SIZE = 64 * 1024 * 1024;

/** A small seeded 32-bit generator (a xorshift-multiply counter hash); deterministic across platforms. */
function nextRandom(state: { s: number }): number {
  state.s = (state.s + 0x9e3779b9) >>> 0;
  let z = state.s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return (z ^ (z >>> 16)) >>> 0;
}

/** The path of resource `id`: up to 1,000 resources per folder. */
export function simulatedPath(id: number): string {
  return `d${String(Math.floor(id / 1000)).padStart(3, '0')}/r${String(id).padStart(6, '0')}.txt`;
}

/** Text of `size` bytes determined by (seed, id, version): printable lines so that the resources are easy to look at. */
function content(seed: number, id: number, version: number, size: number): Buffer {
  const head = `resource ${id} version ${version} seed ${seed}\n`;
  const out = Buffer.alloc(size, 0x2e);
  out.write(head.slice(0, size), 0, 'latin1');
  const state = { s: (seed ^ Math.imul(id + 1, 0x27d4eb2d) ^ Math.imul(version + 1, 0x165667b1)) >>> 0 };
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  for (let i = head.length; i < size; i++) {
    out[i] = (i + 1) % 64 === 0 ? 0x0a : alphabet.charCodeAt(nextRandom(state) % alphabet.length);
  }
  return out;
}

/**
 * The change sequence of a simulated Source. `initial()` gives the starting resources, `next()` the
 * changes one after the other; both are pure functions of the options.
 * @example
 * const sim = new ChangeSimulator({ resources: 100, mix: [1, 3, 1], size: 256, seed: 7 });
 * await sim.populate(dir);
 * const change = sim.next();
 * await applyChange(dir, change);
 */
export class ChangeSimulator {
  readonly #options: SimulatorOptions;
  readonly #state: { s: number };
  /** Ids of the resources that exist now. */
  readonly #live: number[] = [];
  /** Version of each live resource, by id. */
  readonly #versions = new Map<number, number>();
  #nextId = 0;
  #seq = 0;

  constructor(options: SimulatorOptions) {
    const { resources, mix, size, seed } = options;
    if (!Number.isInteger(resources) || resources < 0 || resources > MAX_SIMULATED_RESOURCES) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        `Simulator: resources ${JSON.stringify(resources)} is not an integer from 0 to ${MAX_SIMULATED_RESOURCES}.`,
      );
    }
    if (!Number.isInteger(size) || size < 0 || size > MAX_SIMULATED_SIZE) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        `Simulator: size ${JSON.stringify(size)} is not an integer from 0 to ${MAX_SIMULATED_SIZE}.`,
      );
    }
    if (mix.length !== 3 || mix.some((w) => !Number.isFinite(w) || w < 0) || mix.every((w) => w === 0)) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        `Simulator: mix ${JSON.stringify(mix)} needs three non-negative weights, one of them positive.`,
      );
    }
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        `Simulator: seed ${JSON.stringify(seed)} is not an integer from 0 to 4294967295.`,
      );
    }
    this.#options = { resources, mix: [mix[0], mix[1], mix[2]], size, seed };
    this.#state = { s: seed };
  }

  /** Number of resources that exist now. */
  get resources(): number {
    return this.#live.length;
  }

  /** Number of changes made so far. */
  get changes(): number {
    return this.#seq;
  }

  #create(): { id: number; bytes: Buffer } {
    const id = this.#nextId++;
    this.#live.push(id);
    this.#versions.set(id, 0);
    return { id, bytes: content(this.#options.seed, id, 0, this.#options.size) };
  }

  /** The starting resources, in order (before any change); call once, before `next()`. */
  *initial(): Generator<{ path: string; bytes: Buffer }> {
    if (this.#nextId !== 0 || this.#seq !== 0) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        'Simulator: initial() is only available before the first change.',
      );
    }
    for (let i = 0; i < this.#options.resources; i++) {
      const { id, bytes } = this.#create();
      yield { path: simulatedPath(id), bytes };
    }
  }

  /** Writes the starting resources to `dir`. */
  async populate(dir: string, signal?: AbortSignal): Promise<void> {
    for (const r of this.initial()) {
      signal?.throwIfAborted();
      await writeFileAtomic(join(dir, r.path), [r.bytes], { mkdir: true });
    }
  }

  /** The next change. With no resource left, an update or delete becomes a create. */
  next(): SimulatedChange {
    const [c, u, d] = this.#options.mix;
    const pick = (nextRandom(this.#state) / 0x1_0000_0000) * (c + u + d);
    let change: SimulatedChangeKind = pick < c ? 'created' : pick < c + u ? 'updated' : 'deleted';
    if (change !== 'created' && this.#live.length === 0) change = 'created';
    const seq = ++this.#seq;
    if (change === 'created') {
      const { id, bytes } = this.#create();
      return { seq, change, path: simulatedPath(id), bytes };
    }
    const index = nextRandom(this.#state) % this.#live.length;
    const id = this.#live[index]!;
    if (change === 'updated') {
      const version = (this.#versions.get(id) ?? 0) + 1;
      this.#versions.set(id, version);
      return {
        seq,
        change,
        path: simulatedPath(id),
        bytes: content(this.#options.seed, id, version, this.#options.size),
      };
    }
    // swap-remove keeps the pick O(1) and still deterministic
    this.#live[index] = this.#live[this.#live.length - 1]!;
    this.#live.pop();
    this.#versions.delete(id);
    return { seq, change, path: simulatedPath(id) };
  }
}

/** Applies a change to `dir`: writes through a temporary file and a rename, or removes the file. */
export async function applyChange(dir: string, change: SimulatedChange): Promise<void> {
  const path = join(dir, ...change.path.split('/'));
  if (change.bytes === undefined) await rm(path, { force: true });
  else await writeFileAtomic(path, [change.bytes], { mkdir: true });
}

/** MD5 of a change's bytes, hex (as `rs:md hash` would give it), or undefined for a deletion. */
export function changeDigest(change: SimulatedChange): string | undefined {
  return change.bytes === undefined ? undefined : createHash('md5').update(change.bytes).digest('hex');
}
