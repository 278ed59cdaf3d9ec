// Runs every bench/*.bench.js in its own node process, one after the other, forwarding output.
// Usage: node bench/run.js [name-filter]
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const dir = fileURLToPath(new URL('.', import.meta.url));
const filter = process.argv[2] ?? '';
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.js') && f.includes(filter))
  .sort();
/** Benches that need longer than the default 240 s (planning 10^6 resources on a 2-core machine). */
const TIMEOUTS = { 'queue.bench.js': 900_000, 'aggregate-push.bench.js': 600_000, 'queue-changes.bench.js': 600_000 };
let failed = 0;
for (const file of files) {
  console.log(`# ${file}`);
  // RS_BENCH_TIMEOUT_MS: more than a bench's own limit (4 minutes unless TIMEOUTS says), e.g. for RS_BENCH_JSONL=10000000 (jsonl.bench.js)
  const timeout = process.env.RS_BENCH_TIMEOUT_MS !== undefined ? Number(process.env.RS_BENCH_TIMEOUT_MS) : (TIMEOUTS[file] ?? 240_000);
  const r = spawnSync(process.execPath, [join(dir, file)], { stdio: 'inherit', timeout });
  if (r.status !== 0) {
    failed++;
    console.log(`# ${file} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
