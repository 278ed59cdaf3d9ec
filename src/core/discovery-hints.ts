/**
 * Reading the discovery hints of Z39.99 §6.3 that are text formats of their own: `Sitemap:` lines of robots.txt
 * (§6.3.4) and `<link rel="resourcesync">` in HTML (§6.3.3). The `Link` header is `link-header.ts`; putting the HTML
 * link into a page (the Source's side) is `html-discovery.ts`. Pure.
 */
import { REL_RESOURCESYNC } from './constants.js';

/** An absolute http(s) URL for `href` against `base`, or undefined. */
export function httpUrl(href: string, base: string): string | undefined {
  try {
    const u = new URL(href.trim(), base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `Sitemap:` directives of a robots.txt file, as absolute URLs, in order.
 * @example robotsSitemaps('Sitemap: http://example.com/rl.xml', 'http://example.com/robots.txt') // ['http://example.com/rl.xml']
 * @see Z39.99 §6.3.4, Example 11
 */
export function robotsSitemaps(text: string, robotsUrl: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(/\r\n|\r|\n/)) {
    const line = raw.replace(/#.*$/, '').trim();
    const m = /^sitemap\s*:\s*(\S+)/i.exec(line);
    if (!m) continue;
    const u = httpUrl(m[1]!, robotsUrl);
    if (u !== undefined && !out.includes(u)) out.push(u);
  }
  return out;
}

/**
 * The targets of `<link rel="resourcesync" href="…">` elements of an HTML page, resolved against
 * the page URL (or its `<base href>`). Comments are skipped; `rel` may list several types.
 * @example htmlResourceSyncLinks('<link rel="resourcesync" href="cl.xml">', 'http://e.com/a/p.html') // ['http://e.com/a/cl.xml']
 * @see Z39.99 §6.3.3, Example 9
 */
export function htmlResourceSyncLinks(html: string, pageUrl: string): string[] {
  const text = html.replace(/<!--[\s\S]*?(-->|$)/g, '');
  let base = pageUrl;
  const out: string[] = [];
  const tag = /<(link|base)\b((?:[^>"']|"[^"]*"|'[^']*')*)>/gi;
  for (let m = tag.exec(text); m !== null; m = tag.exec(text)) {
    const attrs = htmlAttributes(m[2]!);
    if (m[1]!.toLowerCase() === 'base') {
      if (attrs.href !== undefined && base === pageUrl) base = httpUrl(attrs.href, pageUrl) ?? base;
      continue;
    }
    const rel = (attrs.rel ?? '').toLowerCase().split(/\s+/);
    if (!rel.includes(REL_RESOURCESYNC) || attrs.href === undefined) continue;
    const u = httpUrl(decodeEntities(attrs.href), base);
    if (u !== undefined && !out.includes(u)) out.push(u);
  }
  return out;
}

function htmlAttributes(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?/g;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    const name = m[1]!.toLowerCase();
    if (!Object.hasOwn(out, name)) out[name] = m[2] ?? m[3] ?? m[4] ?? '';
  }
  return out;
}

function decodeEntities(s: string): string {
  return s.replace(
    /&(amp|lt|gt|quot|apos|#(\d+)|#x([0-9a-f]+));/gi,
    (all, name: string, dec?: string, hex?: string) => {
      if (dec !== undefined) return String.fromCodePoint(Number(dec));
      if (hex !== undefined) return String.fromCodePoint(parseInt(hex, 16));
      return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[name.toLowerCase()] ?? all;
    },
  );
}
