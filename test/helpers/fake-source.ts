import { createHash } from 'node:crypto';
import type { TestServer } from './test-server.js';

/** One change the fake Source recorded. */
export interface FakeChange {
  path: string;
  change: 'created' | 'updated' | 'deleted';
  time: number;
  md5?: string;
  length?: number;
}

const xmlEscape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const iso = (t: number): string => new Date(t).toISOString().replace('.000Z', 'Z');
const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Encodes a relative file path as a URL path (each segment percent-encoded). */
export const urlPath = (p: string): string => `/${p.split('/').map(encodeURIComponent).join('/')}`;

/**
 * A Source held in memory and published on a TestServer with hand-written documents:
 * `/capabilitylist.xml`, `/resourcelist.xml`, `/changelist.xml` (a Change List, or a Change List Index of
 * lists of `perList` changes when `rollover` is set), in spec 1.1 (`datetime`) or 1.0 (`lastmod` only).
 */
export class FakeSource {
  readonly files = new Map<string, { body: Buffer; lastmod: number }>();
  readonly changes: FakeChange[] = [];
  clock = Date.UTC(2020, 0, 1);
  /** When change tracking started (the `from` of the first Change List). */
  since = this.clock;
  spec: '1.0' | '1.1' = '1.1';
  rollover: number | undefined;
  reverse = false;
  /** Omit hashes and lengths from the lists. */
  bare = false;

  constructor(readonly server: TestServer) {}

  get origin(): string {
    return this.server.origin;
  }
  get capabilityList(): string {
    return `${this.origin}/capabilitylist.xml`;
  }

  tick(): number {
    this.clock += 1000;
    return this.clock;
  }

  put(path: string, body: string | Buffer, track = true): void {
    const b = Buffer.from(body);
    const existed = this.files.has(path);
    const t = this.tick();
    this.files.set(path, { body: b, lastmod: t });
    if (track) this.changes.push({ path, change: existed ? 'updated' : 'created', time: t, md5: md5(b), length: b.length });
  }

  remove(path: string): void {
    this.files.delete(path);
    this.changes.push({ path, change: 'deleted', time: this.tick() });
  }

  #md(b: Buffer): string {
    return this.bare ? '' : ` hash="md5:${md5(b)} sha-256:${sha256(b)}" length="${b.length}"`;
  }

  resourceListXml(at = this.tick()): string {
    const urls = [...this.files].map(
      ([p, f]) => `<url><loc>${xmlEscape(this.origin + urlPath(p))}</loc><lastmod>${iso(f.lastmod)}</lastmod><rs:md${this.#md(f.body)}/></url>`,
    );
    return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="${this.capabilityList}"/><rs:md capability="resourcelist" at="${iso(at)}" completed="${iso(at)}"/>
${urls.join('\n')}
</urlset>`;
  }

  changeListXml(changes: FakeChange[], from: number, until: number | undefined): string {
    const list = this.reverse ? [...changes].reverse() : changes;
    const urls = list.map((c) => {
      const attrs = [`change="${c.change}"`];
      if (this.spec === '1.1') attrs.push(`datetime="${iso(c.time)}"`);
      if (c.md5 !== undefined && !this.bare) attrs.push(`hash="md5:${c.md5}" length="${c.length}"`);
      return `<url><loc>${xmlEscape(this.origin + urlPath(c.path))}</loc><lastmod>${iso(c.time)}</lastmod><rs:md ${attrs.join(' ')}/></url>`;
    });
    return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="${this.capabilityList}"/><rs:md capability="changelist" from="${iso(from)}"${until !== undefined ? ` until="${iso(until)}"` : ''}/>
${urls.join('\n')}
</urlset>`;
  }

  /** (Re)publishes every document and resource on the server. */
  publish(): void {
    const s = this.server;
    for (const p of [...s.routes.keys()]) if (!p.endsWith('.xml')) s.delete(p);
    for (const [p, f] of this.files) s.set(urlPath(p), f.body);
    s.set('/capabilitylist.xml', {
      body: `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="capabilitylist"/>
<url><loc>${this.origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>${this.origin}/changelist.xml</loc><rs:md capability="changelist"/></url>
</urlset>`,
    });
    s.set('/resourcelist.xml', this.resourceListXml());
    const now = this.tick();
    if (this.rollover === undefined) {
      s.set('/changelist.xml', this.changeListXml(this.changes, this.since, undefined));
      return;
    }
    const per = this.rollover;
    const sitemaps: string[] = [];
    let from = this.since;
    for (let i = 0; i * per < Math.max(1, this.changes.length); i++) {
      const chunk = this.changes.slice(i * per, (i + 1) * per);
      const closed = (i + 1) * per < this.changes.length;
      const until = closed ? chunk[chunk.length - 1]!.time : undefined;
      const name = `/changelist-${i}.xml`;
      s.set(name, this.changeListXml(chunk, from, until));
      sitemaps.push(`<sitemap><loc>${this.origin}${name}</loc><rs:md from="${iso(from)}"${until !== undefined ? ` until="${iso(until)}"` : ''}/></sitemap>`);
      if (until !== undefined) from = until;
    }
    void now;
    s.set('/changelist.xml', `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="${this.capabilityList}"/><rs:md capability="changelist" from="${iso(this.since)}"/>
${sitemaps.join('\n')}
</sitemapindex>`);
  }
}
