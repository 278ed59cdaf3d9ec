/**
 * Opening documents for the CLI: a file path or an http(s) URL → the streaming reader of the parser.
 * Failures (unreadable input, malformed XML, limits) become one issue with the error's RS_* code, so
 * that `validate` and `inspect` report them like any other problem.
 */
import { createReadStream } from 'node:fs';
import { isResourceSyncError } from '../core/errors.js';
import type { DocumentKind } from '../core/model/document-kinds.js';
import type { DocumentHeader, Entry } from '../core/model/types.js';

/** The parser's reader (`DocumentReader` of src/core/xml/read-document.ts). */
export interface Reader {
  header: DocumentHeader;
  kind: DocumentKind | undefined;
  entries: AsyncIterable<Entry>;
}

type ReadDocument = (input: AsyncIterable<Uint8Array>) => Promise<Reader>;

// The parser and openInput are the lead's (src/core/xml/read-document.ts, src/node/open-input.ts);
// loaded by name until they are merged into this branch.
const PARSER = '../core/xml/read-document.js';

/** Opens a file or an http(s) URL and starts reading it as a ResourceSync document. */
export async function openDocument(input: string): Promise<Reader> {
  const { readDocument } = (await import(PARSER)) as { readDocument: ReadDocument };
  const bytes: AsyncIterable<Uint8Array> = /^https?:\/\//i.test(input) ? await fetchBytes(input) : createReadStream(input);
  return readDocument(bytes);
}

async function fetchBytes(url: string): Promise<AsyncIterable<Uint8Array>> {
  const res = await fetch(url);
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP status ${res.status}`);
  return res.body as unknown as AsyncIterable<Uint8Array>;
}

/** An issue as the CLI prints it: validator issues and parser/IO errors alike. */
export interface CliIssue {
  code: string;
  severity: 'error' | 'warning';
  message: string;
  section: string;
  line?: number;
  path?: string;
}

/** The issue for an error thrown while opening or reading a document. */
export function errorIssue(err: unknown): CliIssue {
  if (isResourceSyncError(err)) {
    const issue: CliIssue = { code: err.code, severity: 'error', message: err.message, section: errorSection(err.code) };
    const line = err.data['line'];
    if (typeof line === 'number') issue.line = line;
    return issue;
  }
  const e = err as NodeJS.ErrnoException;
  return { code: 'RS_IO', severity: 'error', message: e?.message ?? String(err), section: '-' };
}

function errorSection(code: string): string {
  if (code.startsWith('RS_XML_')) return 'XML 1.0';
  if (code.startsWith('RS_LIMIT_')) return 'Z39.99 §7, Sitemaps protocol';
  if (code === 'RS_NOT_RESOURCESYNC' || code === 'RS_INVALID_DOCUMENT') return 'Z39.99 §7';
  return '-';
}
