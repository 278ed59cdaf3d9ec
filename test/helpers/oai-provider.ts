import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES } from './paths.js';
import { until } from './cli-child.js';

const APP = join(FIXTURES, 'oai-provider', 'app.pl');

/** A record of the test provider (see test/fixtures/oai-provider/README.md). */
export interface ProviderRecord {
  _id: string;
  datestamp: string;
  title: string;
  url: string;
  set: string[];
  deleted: 0 | 1;
}

/** Why the Catmandu provider cannot run here (perl or the Debian package missing), or undefined when it can. */
export function catmanduMissing(): string | undefined {
  const r = spawnSync('perl', ['-e', 'use Dancer; require Dancer::Plugin::Catmandu::OAI; 1'], { encoding: 'utf8' });
  if (r.error !== undefined) return 'perl is not installed';
  if (r.status !== 0) return 'the Debian package libdancer-plugin-catmandu-oai-perl is not installed (apt-get install libdancer-plugin-catmandu-oai-perl)';
  return undefined;
}

/** A running Catmandu OAI-PMH provider whose records a test changes. */
export interface CatmanduProvider {
  readonly baseUrl: string;
  readonly child: ChildProcess;
  /** Replaces the records (the provider reads them again at its next request). */
  setRecords(records: ProviderRecord[]): void;
  close(): Promise<void>;
}

/** `n` records `rec1`…`recN` in sets odd/even, datestamps in January 2024 (day ones with `day`). */
export function sampleRecords(n: number, day = false): ProviderRecord[] {
  return Array.from({ length: n }, (_, k) => {
    const i = k + 1;
    const d = `2024-01-${String(1 + (i % 28)).padStart(2, '0')}`;
    return { _id: `rec${i}`, datestamp: day ? d : `${d}T${String(i % 24).padStart(2, '0')}:00:00Z`, title: `Record ${i}`, url: `https://repo.example/items/${i}`, set: [i % 2 === 1 ? 'odd' : 'even'], deleted: 0 };
  });
}

/**
 * Starts test/fixtures/oai-provider/app.pl on 127.0.0.1 (a free port) over the records in `dir`/records.json.
 * @example const p = await startCatmanduProvider(dir, sampleRecords(20), { limit: 7 });
 */
export async function startCatmanduProvider(dir: string, records: ProviderRecord[], options: { limit?: number; day?: boolean } = {}): Promise<CatmanduProvider> {
  const file = join(dir, 'records.json');
  const setRecords = (rs: ProviderRecord[]): void => {
    writeFileSync(`${file}.tmp`, JSON.stringify(rs));
    renameSync(`${file}.tmp`, file);
  };
  setRecords(records);
  const child = spawn('perl', [APP], {
    env: { ...process.env, RECORDS: file, PORT: '0', LIMIT: String(options.limit ?? 100), GRANULARITY: options.day === true ? 'day' : 'second' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await until('the OAI-PMH provider', () => /listening on /.test(out) || child.exitCode !== null, 30_000);
  } catch (error) {
    child.kill();
    throw error;
  }
  if (child.exitCode !== null) throw new Error(`the OAI-PMH provider exited: ${err}`);
  const baseUrl = /listening on (\S+)/.exec(out)![1]!;
  // the line comes just before the server binds: wait until it answers
  const deadline = Date.now() + 30_000;
  while (!(await fetch(`${baseUrl}?verb=Identify`).then((r) => r.ok, () => false))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill();
      throw new Error(`the OAI-PMH provider does not answer: ${err}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    baseUrl,
    child,
    setRecords,
    close: async () => {
      if (child.exitCode === null) {
        child.kill();
        await new Promise((r) => child.once('exit', r));
      }
    },
  };
}
