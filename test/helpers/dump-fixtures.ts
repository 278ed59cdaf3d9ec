import { createHash } from 'node:crypto';
import yazl from 'yazl';
import type { TestServer } from './test-server.js';

/** One `<url>` of a dump manifest. */
export interface ManifestItem {
  loc: string;
  path?: string;
  /** Bytes to compute hash/length from (when `hash`/`length` are not given explicitly). */
  data?: Uint8Array | string;
  hash?: string | null;
  length?: string | null;
  change?: 'created' | 'updated' | 'deleted';
  lastmod?: string;
}

const md5 = (b: Uint8Array | string) => createHash('md5').update(b).digest('hex');
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
}

/** A Resource Dump Manifest or Change Dump Manifest. @see Z39.99 §11.2, §13.2 */
export function manifestXml(
  capability: 'resourcedump-manifest' | 'changedump-manifest',
  items: ManifestItem[],
  up = 'http://127.0.0.1/capabilitylist.xml',
): string {
  const time = capability === 'resourcedump-manifest' ? 'at="2013-01-03T09:00:00Z"' : 'from="2013-01-02T00:00:00Z"';
  const urls = items.map((it) => {
    const attrs: string[] = [];
    if (it.change) attrs.push(`change="${it.change}"`);
    const hash =
      it.hash === undefined
        ? it.data === undefined
          ? undefined
          : `md5:${md5(it.data)} sha-256:${sha256(it.data)}`
        : it.hash;
    const length =
      it.length === undefined ? (it.data === undefined ? undefined : String(Buffer.byteLength(it.data))) : it.length;
    if (hash !== null && hash !== undefined) attrs.push(`hash="${hash}"`);
    if (length !== null && length !== undefined) attrs.push(`length="${length}"`);
    if (it.path !== undefined) attrs.push(`path="${esc(it.path)}"`);
    return `  <url><loc>${esc(it.loc)}</loc>${it.lastmod ? `<lastmod>${it.lastmod}</lastmod>` : ''}<rs:md ${attrs.join(' ')}/></url>\n`;
  });
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n` +
    `  <rs:ln rel="up" href="${esc(up)}"/>\n  <rs:md capability="${capability}" ${time}/>\n${urls.join('')}</urlset>\n`
  );
}

/** One package of a Resource Dump or Change Dump. @see Z39.99 §11.1, §13.1 */
export interface PackageItem {
  loc: string;
  zip?: Uint8Array;
  hash?: string | null;
  length?: string | null;
  from?: string;
  until?: string;
  contents?: string;
}

/** A Resource Dump / Change Dump (or their index with `root: 'sitemapindex'`). */
export function dumpXml(
  capability: 'resourcedump' | 'changedump',
  packages: PackageItem[],
  root: 'urlset' | 'sitemapindex' = 'urlset',
): string {
  const time = capability === 'resourcedump' ? 'at="2013-01-03T09:00:00Z"' : 'from="2013-01-01T00:00:00Z"';
  const child = root === 'urlset' ? 'url' : 'sitemap';
  const urls = packages.map((p) => {
    const attrs = ['type="application/zip"'];
    const length = p.length === undefined ? (p.zip ? String(p.zip.byteLength) : undefined) : p.length;
    const hash = p.hash === undefined ? (p.zip ? `sha-256:${sha256(p.zip)}` : undefined) : p.hash;
    if (length !== null && length !== undefined) attrs.push(`length="${length}"`);
    if (hash !== null && hash !== undefined) attrs.push(`hash="${hash}"`);
    if (p.from) attrs.push(`from="${p.from}"`);
    if (p.until) attrs.push(`until="${p.until}"`);
    const ln = p.contents ? `<rs:ln rel="contents" href="${esc(p.contents)}" type="application/xml"/>` : '';
    return `  <${child}><loc>${esc(p.loc)}</loc><rs:md ${root === 'urlset' ? attrs.join(' ') : ''}/>${ln}</${child}>\n`;
  });
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n` +
    `  <rs:ln rel="up" href="http://127.0.0.1/capabilitylist.xml"/>\n  <rs:md capability="${capability}" ${time}/>\n${urls.join('')}</${root}>\n`
  );
}

/** A real ZIP written by yazl; `compress` per file (default true). */
export async function yazlZip(
  files: Array<{ name: string; data: Uint8Array | string; compress?: boolean }>,
  options: { zip64?: boolean } = {},
): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const forceZip64Format = options.zip64 === true;
  for (const f of files)
    zip.addBuffer(Buffer.from(f.data), f.name, { compress: f.compress ?? true, mtime: new Date(Date.UTC(2013, 0, 3)), forceZip64Format });
  zip.end({ forceZip64Format, comment: '' });
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

/**
 * Serves on `server` a Source whose only inventory is one Change Dump (`/cd-1.zip`, its manifest beside it, from
 * 00:00 to 06:00 on 2024-01-01): a.txt and b.txt created, gone.txt created then deleted, a.txt updated with the
 * bitstream a2.txt (`alpha, later`). Answers the Capability List's URL.
 */
export async function serveChangeDumpOnly(server: TestServer): Promise<string> {
  const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
  const origin = server.origin;
  const cap = `${origin}/capabilitylist.xml`;
  const t = (h: number): string => new Date(Date.UTC(2024, 0, 1, h)).toISOString();
  const manifest = manifestXml(
    'changedump-manifest',
    [
      { loc: `${origin}/a.txt`, path: '/a.txt', data: 'alpha', change: 'created', lastmod: t(1) },
      { loc: `${origin}/b.txt`, path: '/b.txt', data: 'beta', change: 'created', lastmod: t(2) },
      { loc: `${origin}/gone.txt`, path: '/gone.txt', data: 'brief', change: 'created', lastmod: t(3) },
      { loc: `${origin}/gone.txt`, change: 'deleted', lastmod: t(4) },
      { loc: `${origin}/a.txt`, path: '/a2.txt', data: 'alpha, later', change: 'updated', lastmod: t(5) },
    ],
    cap,
  ).replace('from="2013-01-02T00:00:00Z"', `from="${t(0)}" until="${t(6)}"`);
  const zip = await yazlZip([
    { name: 'manifest.xml', data: manifest },
    { name: 'a.txt', data: 'alpha' },
    { name: 'b.txt', data: 'beta' },
    { name: 'gone.txt', data: 'brief' },
    { name: 'a2.txt', data: 'alpha, later' },
  ]);
  server.set('/cd-1.zip', zip);
  server.set('/cd-1-manifest.xml', manifest);
  server.set(
    '/changedump.xml',
    dumpXml('changedump', [
      { loc: `${origin}/cd-1.zip`, zip, from: t(0), until: t(6), contents: `${origin}/cd-1-manifest.xml` },
    ]).replace('from="2013-01-01T00:00:00Z"', `from="${t(0)}"`),
  );
  server.set(
    '/capabilitylist.xml',
    `<urlset ${NS}><rs:md capability="capabilitylist"/><url><loc>${origin}/changedump.xml</loc><rs:md capability="changedump"/></url></urlset>`,
  );
  return cap;
}
