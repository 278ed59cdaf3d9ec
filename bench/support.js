// Helpers shared by the benches (not a bench itself: run.js runs only *.bench.js).
import { spawnSync } from 'node:child_process';
import { createServer as createNetServer } from 'node:net';

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
