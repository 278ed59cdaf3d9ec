/**
 * Media types of published files, from their extension: the `type` attribute of `rs:md`.
 * A small table of common types; anything else is `application/octet-stream`.
 * @see Z39.99 §7 (`type`)
 */

const TABLE: Record<string, string> = {
  txt: 'text/plain', text: 'text/plain', md: 'text/markdown', csv: 'text/csv', tsv: 'text/tab-separated-values',
  html: 'text/html', htm: 'text/html', xhtml: 'application/xhtml+xml', css: 'text/css', js: 'text/javascript',
  mjs: 'text/javascript', json: 'application/json', jsonld: 'application/ld+json', xml: 'application/xml',
  xsl: 'application/xml', xsd: 'application/xml', rdf: 'application/rdf+xml', ttl: 'text/turtle', nt: 'application/n-triples',
  nq: 'application/n-quads', atom: 'application/atom+xml', rss: 'application/rss+xml', ics: 'text/calendar',
  pdf: 'application/pdf', ps: 'application/postscript', rtf: 'application/rtf', epub: 'application/epub+zip',
  doc: 'application/msword', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint', pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text', ods: 'application/vnd.oasis.opendocument.spreadsheet',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
  tif: 'image/tiff', tiff: 'image/tiff', bmp: 'image/bmp', ico: 'image/vnd.microsoft.icon', avif: 'image/avif',
  jp2: 'image/jp2', mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', flac: 'audio/flac', m4a: 'audio/mp4',
  mp4: 'video/mp4', webm: 'video/webm', mov: 'video/quicktime', avi: 'video/x-msvideo', mkv: 'video/x-matroska',
  zip: 'application/zip', gz: 'application/gzip', tgz: 'application/gzip', tar: 'application/x-tar',
  bz2: 'application/x-bzip2', xz: 'application/x-xz', '7z': 'application/x-7z-compressed', warc: 'application/warc',
  woff: 'font/woff', woff2: 'font/woff2', ttf: 'font/ttf', otf: 'font/otf', wasm: 'application/wasm',
  bib: 'application/x-bibtex', tex: 'application/x-tex', yaml: 'application/yaml', yml: 'application/yaml',
};

/** The default media type for unknown extensions. */
export const DEFAULT_MEDIA_TYPE = 'application/octet-stream';

/**
 * The media type of a file path from its extension (case-insensitive).
 * @example mediaType('docs/Report.PDF') === 'application/pdf'
 */
export function mediaType(path: string): string {
  const slash = path.lastIndexOf('/');
  const dot = path.lastIndexOf('.');
  if (dot <= slash + 1) return DEFAULT_MEDIA_TYPE;
  return TABLE[path.slice(dot + 1).toLowerCase()] ?? DEFAULT_MEDIA_TYPE;
}
