// Helpers shared by the benches (not a bench itself: run.js runs only *.bench.js).
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';

/** True when `cmd` is on the PATH (nginx, wrk, xmllint are optional baselines). */
export function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Answers a request for a generated document of `dir` (`/.well-known/resourcesync` is `sd.xml`, `/<name>.xml`
 * the file of that name) with `placeholder` replaced by `origin`, line by line so that no placeholder is split
 * between two chunks; 404 for anything else.
 */
export function sendDocument(res, dir, path, placeholder, origin) {
  const file = path === '/.well-known/resourcesync' ? 'sd.xml' : /^\/[\w.-]+\.xml$/.test(path) ? path.slice(1) : undefined;
  if (file === undefined || !existsSync(join(dir, file))) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/xml' });
  let tail = '';
  const stream = createReadStream(join(dir, file), { encoding: 'utf8', highWaterMark: 256 * 1024 });
  stream.on('data', (chunk) => {
    const text = tail + chunk;
    const cut = text.lastIndexOf('\n') + 1;
    tail = text.slice(cut);
    if (!res.write(text.slice(0, cut).replaceAll(placeholder, origin))) {
      stream.pause();
      res.once('drain', () => stream.resume());
    }
  });
  stream.on('end', () => res.end(tail.replaceAll(placeholder, origin)));
  stream.on('error', () => res.destroy());
  res.on('close', () => stream.destroy());
}
