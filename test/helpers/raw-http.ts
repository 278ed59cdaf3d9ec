import { connect } from 'node:net';

/**
 * Sends one raw HTTP/1.1 request (the target and `Host` exactly as given) and resolves with the status and whole
 * reply.
 */
export function rawRequest(
  port: number,
  target: string,
  method = 'GET',
  timeoutMs = 30_000,
  host = '127.0.0.1',
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply to ${method} ${JSON.stringify(target)} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m === null) reject(new Error(`no HTTP status in reply to ${JSON.stringify(target)}: ${JSON.stringify(text.slice(0, 80))}`));
      else resolve({ status: Number(m[1]), text });
    });
    socket.write(Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, 'latin1'));
  });
}
