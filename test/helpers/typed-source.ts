/**
 * A static Source on loopback whose Resource List gives each resource a `type` of its own (not what its name
 * suggests), with its `lastmod`, MD5 and length: what an aggregate must convey as the original's in its `via` links.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts the Source on 127.0.0.1 (port 0) serving `files` (path → body and listed type). */
export async function typedSource(files: Record<string, { body: string; type: string }>): Promise<{ origin: string; server: Server }> {
  let origin = '';
  const xml = (inner: string, capability: string): string =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="${capability}"/>${inner}</urlset>\n`;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const send = (type: string, body: string): void => void res.writeHead(200, { 'content-type': type }).end(body);
    if (path === '/.well-known/resourcesync') return send('application/xml', xml(`<url><loc>${origin}/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url>`, 'description'));
    if (path === '/capabilitylist.xml') return send('application/xml', xml(`<url><loc>${origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>`, 'capabilitylist'));
    if (path === '/resourcelist.xml') {
      const urls = Object.entries(files).map(([p, f]) => {
        const md5 = createHash('md5').update(f.body).digest('hex');
        return `<url><loc>${origin}/${p}</loc><lastmod>2026-01-02T03:04:05Z</lastmod><rs:md hash="md5:${md5}" length="${Buffer.byteLength(f.body)}" type="${f.type}"/></url>`;
      });
      return send('application/xml', xml(urls.join(''), 'resourcelist').replace('<rs:md capability="resourcelist"/>', '<rs:md capability="resourcelist" at="2026-01-02T03:04:05Z"/>'));
    }
    const f = files[path.slice(1)];
    if (f === undefined) return void res.writeHead(404).end();
    send('application/octet-stream', f.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, server };
}

