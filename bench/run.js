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
const TIMEOUTS = { 'queue.bench.js': 900_000 };
let failed = 0;
for (const file of files) {
  console.log(`# ${file}`);
  const r = spawnSync(process.execPath, [join(dir, file)], { stdio: 'inherit', timeout: TIMEOUTS[file] ?? 240_000 });
  if (r.status !== 0) {
    failed++;
    console.log(`# ${file} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
