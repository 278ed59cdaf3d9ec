/** What a progress line shows. */
export interface ProgressState {
  label: string;
  done: number;
  total?: number;
  /** An estimate of the total while it is not known: shown with `~`. */
  estimate?: number;
  bytes: number;
  failed: number;
}

function human(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function duration(s: number): string {
  if (!Number.isFinite(s) || s < 0) return '--:--';
  const m = Math.floor(s / 60);
  const sec = Math.floor(s % 60);
  return `${m}:${String(sec).padStart(2, '0')}`;
}

/**
 * The total a line shows, never below what is done nor 0: the known one, else the estimate marked `~`, else none.
 * @example shownTotal({ done: 5, estimate: 40 }) // { n: 40, mark: '~' }
 */
function shownTotal(s: Pick<ProgressState, 'done' | 'total' | 'estimate'>): { n: number; mark: string } | undefined {
  if (s.total !== undefined && s.total > 0 && s.total >= s.done) return { n: s.total, mark: '' };
  if (s.total === undefined && s.estimate !== undefined && s.estimate > 0) return { n: Math.max(s.estimate, s.done), mark: '~' };
  return undefined;
}

/**
 * A one-line progress bar on a terminal (stderr): resources done/total (`of ?` until the total is known or
 * estimated; an estimate is marked `~`), a bar and an ETA when there is a total, bytes and rate. Does nothing when
 * the stream is not a TTY.
 */
export class ProgressBar {
  readonly #out: NodeJS.WriteStream | undefined;
  readonly #started = Date.now();
  #last = 0;
  #shown = false;

  /** @param enabled false turns the bar off (e.g. with `--json`, whose output is for programs) */
  constructor(stream: NodeJS.WriteStream, enabled = true) {
    this.#out = enabled && stream.isTTY ? stream : undefined;
  }

  update(s: ProgressState, force = false): void {
    const out = this.#out;
    if (out === undefined) return;
    const now = Date.now();
    if (!force && now - this.#last < 100) return;
    this.#last = now;
    const secs = Math.max(0.001, (now - this.#started) / 1000);
    const rate = s.done / secs;
    // a terminal may report 0 columns (or none): then a usual width is assumed
    const columns = out.columns !== undefined && out.columns > 0 ? out.columns : 80;
    const width = Math.max(10, Math.min(30, columns - 70));
    let bar = '';
    let eta = '';
    const total = shownTotal(s);
    if (total !== undefined) {
      const f = Math.min(1, s.done / total.n);
      const fill = Math.round(f * width);
      bar = `[${'#'.repeat(fill)}${'-'.repeat(width - fill)}] `;
      eta = ` ETA ${total.mark}${duration((total.n - s.done) / Math.max(rate, 1e-9))}`;
    }
    const count = total !== undefined ? `${s.done}/${total.mark}${total.n}` : `${s.done} of ?`;
    const failed = s.failed > 0 ? ` ${s.failed} failed` : '';
    const line = `${s.label} ${bar}${count} resources, ${human(s.bytes)}, ${rate.toFixed(0)}/s, ${human(s.bytes / secs)}/s${eta}${failed}`;
    out.write(`\r\x1b[2K${line.slice(0, Math.max(20, columns - 1))}`);
    this.#shown = true;
  }

  /** Clears the line. */
  done(): void {
    if (this.#out !== undefined && this.#shown) this.#out.write('\r\x1b[2K');
    this.#shown = false;
  }
}
