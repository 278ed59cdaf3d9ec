/**
 * A WebSub subscriber for tests: a real HTTP server on 127.0.0.1 that answers verifications of intent
 * (echo the challenge, or misbehave on purpose) and records every delivery with its headers and bytes.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type ChallengeMode = 'echo' | 'wrong' | 'not-found' | 'redirect' | 'server-error';

export class TestSubscriber {
  readonly verifications: URL[] = [];
  readonly deliveries: Received[] = [];
  /** Every delivery request, acknowledged or not. */
  readonly attempts: Received[] = [];
  challenge: ChallengeMode = 'echo';
  /** Status answered to deliveries; a function is called per attempt. */
  deliveryStatus: number | ((n: number) => number) = 200;
  /** Where a 'redirect' answer points. */
  redirectTo = '';

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** Starts a subscriber on 127.0.0.1 (port 0 picks one; pass a port to come back on the same one). */
  static async start(port = 0): Promise<TestSubscriber> {
    const ref: { self?: TestSubscriber } = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const s = ref.self!;
        const url = new URL(req.url ?? '/', 'http://127.0.0.1');
        if (req.method === 'GET') {
          s.verifications.push(url);
          const challenge = url.searchParams.get('hub.challenge') ?? '';
          switch (s.challenge) {
            case 'echo':
              res.writeHead(200, { 'content-type': 'text/plain' }).end(challenge);
              return;
            case 'wrong':
              res.writeHead(200, { 'content-type': 'text/plain' }).end(`${challenge}x`);
              return;
            case 'not-found':
              res.writeHead(404).end();
              return;
            case 'server-error':
              res.writeHead(500).end(challenge);
              return;
            case 'redirect':
              res.writeHead(302, { location: `${s.redirectTo}${url.search}` }).end();
              return;
          }
        }
        const received: Received = { url: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) };
        s.attempts.push(received);
        const status = typeof s.deliveryStatus === 'function' ? s.deliveryStatus(s.attempts.length) : s.deliveryStatus;
        if (status >= 200 && status < 300) s.deliveries.push(received);
        if (status >= 300 && status < 400) res.writeHead(status, { location: s.redirectTo }).end();
        else res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    ref.self = new TestSubscriber(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return ref.self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Waits (polling every 5 ms, at most `timeoutMs`) until `predicate` holds; throws otherwise. */
  async waitFor(predicate: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(5);
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
