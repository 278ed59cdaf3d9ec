/**
 * A test oracle: reads a ResourceSync document with saxes (a conforming XML parser) into the model of
 * `src/core/model/types.ts`, independently of the library's own parser. Small documents only.
 */
import { SaxesParser } from 'saxes';
import type { Entry, Ln, Md, ResourceSyncDocument, RootElement } from '../../src/core/model/types.js';

const SM = 'http://www.sitemaps.org/schemas/sitemap/0.9';
const RS = 'http://www.openarchives.org/rs/terms/';

export function parseXml(text: string): ResourceSyncDocument {
  const parser = new SaxesParser({ xmlns: true });
  let root: RootElement | undefined;
  let md: Md | undefined;
  const ln: Ln[] = [];
  const entries: Entry[] = [];
  let entry: Entry | undefined;
  let field: 'loc' | 'lastmod' | 'changefreq' | undefined;
  let textBuf = '';
  const attrs = (a: Record<string, { local: string; uri: string; value: string }>): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const v of Object.values(a)) if (v.uri === '') out[v.local] = v.value;
    return out;
  };
  parser.on('opentag', (tag) => {
    const a = attrs(tag.attributes);
    if (tag.uri === SM && (tag.local === 'urlset' || tag.local === 'sitemapindex') && root === undefined) root = tag.local;
    else if (tag.uri === SM && (tag.local === 'url' || tag.local === 'sitemap')) entry = { loc: '' };
    else if (tag.uri === SM && (tag.local === 'loc' || tag.local === 'lastmod' || tag.local === 'changefreq')) {
      field = tag.local;
      textBuf = '';
    } else if (tag.uri === RS && tag.local === 'md') {
      if (entry) entry.md = a;
      else md = a;
    } else if (tag.uri === RS && tag.local === 'ln') {
      if (entry) (entry.ln ??= []).push(a);
      else ln.push(a);
    }
  });
  parser.on('text', (t) => {
    if (field) textBuf += t;
  });
  parser.on('closetag', (tag) => {
    if (field && tag.local === field && entry) {
      entry[field] = textBuf.trim();
      field = undefined;
    } else if (tag.uri === SM && (tag.local === 'url' || tag.local === 'sitemap') && entry) {
      entries.push(entry);
      entry = undefined;
    }
  });
  parser.write(text).close();
  if (root === undefined) throw new Error('not a sitemap document');
  const doc: ResourceSyncDocument = { root, ln, entries };
  if (md) doc.md = md;
  return doc;
}
