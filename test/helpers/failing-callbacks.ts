/**
 * Callbacks for hub tests under load: a server on 127.0.0.1 that confirms every verification of intent and
 * answers 500 to every delivery, recording each delivery's size (never keeping its bytes).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FailingCallbacks {
  url: string;
  /** Bytes of each delivery attempt received, in order. */
  bodies: number[];
  close(): Promise<void>;
}

export async function failingCallbacks(): Promise<FailingCallbacks> {
  const bodies: number[] = [];
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET') return void res.end(u.searchParams.get('hub.challenge') ?? '');
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.byteLength));
    req.on('end', () => {
      bodies.push(n);
      res.writeHead(500).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
