// Child of jsonl.bench.js: reads a JSON-lines feed on stdin and either publishes it (`publish`: staged, recorded
// in the SQLite snapshots, written as a Resource List Index) or only reads and parses it (`parse`: the baseline).
// Prints one JSON line: entries, time, CPU time and process.resourceUsage().maxRSS (KiB).
import { join } from 'node:path';
import { publish } from '../dist/src/source/publish.js';
import { jsonLinesFeed } from '../dist/src/source/inventory-feed.js';
import { textLines } from '../dist/src/node/text-lines.js';

const [mode, out] = process.argv.slice(2);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const t0 = performance.now();
let entries = 0;
let parts = 0;
if (mode === 'parse') {
  for await (const { text } of textLines(process.stdin)) {
    if (JSON.parse(text).loc !== undefined) entries++;
  }
} else {
  const r = await publish({
    sets: [{ name: 'items', feed: jsonLinesFeed(() => process.stdin, { location: 'stdin' }) }],
    baseUrl: 'https://example.org/',
    outDir: join(out, 'public'),
    stateDir: join(out, 'state'),
  });
  entries = r.resources;
  parts = r.documents.filter((d) => /resourcelist-1-part\d+\.xml$/.test(d)).length;
}
const ms = performance.now() - t0;
process.stdout.write(`${JSON.stringify({ entries, parts, ms, cpuMs: cpuMs(), maxRSS: process.resourceUsage().maxRSS })}\n`);
