/**
 * Opening documents for the CLI: a file path or an http(s) URL → the streaming reader of the parser.
 * Failures (unreadable input, malformed XML, limits) become one issue with the error's RS_* code, so
 * that `validate` and `inspect` report them like any other problem.
 */
import { isResourceSyncError, messageOf } from '../core/errors.js';
import { readDocument, type DocumentReader } from '../core/xml/read-document.js';
import { openInput } from '../node/open-input.js';

/** Opens a file or an http(s) URL and starts reading it as a ResourceSync document. */
export function openDocument(input: string): Promise<DocumentReader> {
  return readDocument(openInput(input));
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
  const message = messageOf(err);
  return { code: 'RS_IO', severity: 'error', message, section: '-' };
}

function errorSection(code: string): string {
  if (code.startsWith('RS_XML_')) return 'XML 1.0';
  if (code.startsWith('RS_LIMIT_')) return 'Z39.99 §7, Sitemaps protocol';
  if (code === 'RS_NOT_RESOURCESYNC' || code === 'RS_INVALID_DOCUMENT') return 'Z39.99 §7';
  return '-';
}
