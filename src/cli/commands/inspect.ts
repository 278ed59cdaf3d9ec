/**
 * `resourcesync inspect [--json] <file-or-url>`: what a document is — its kind, capability and root,
 * its times (at/completed/from/until), its links, the number of entries, the changes by type (Change
 * Lists, Change Dump Manifests, notifications), the parts of an index and the capabilities listed by
 * a Capability List or Source Description.
 * @see Z39.99 §6.1 (structure), §7 (document formats)
 */
import { stderr, stdout } from 'node:process';
import { errorIssue, openDocument } from '../documents.js';
import { formatIssue } from './validate.js';
import { parseCommandArgs, usageError } from '../command-args.js';

const HELP = `Usage: resourcesync inspect [--json] <file-or-url>

Describes a ResourceSync document: kind, capability, times, links, entry count,
changes by type, index parts and listed capabilities.

Options:
  --json       print one JSON object on stdout
  -h, --help   show this help
`;

/** What `inspect` reports about a document. */
export interface Inspection {
  input: string;
  /** Document kind id, e.g. `change-list-index`; null when the root/capability pair is unknown. */
  kind: string | null;
  /** The spec's name, e.g. "Change List Index". */
  name: string | null;
  root: 'urlset' | 'sitemapindex';
  capability: string | null;
  at?: string;
  completed?: string;
  from?: string;
  until?: string;
  links: { rel: string; href: string }[];
  entries: number;
  /** Changes by type, for documents whose entries are changes. */
  changes?: Record<string, number>;
  /** Locations of the documents an index groups. */
  parts?: string[];
  /** Capabilities listed by a Capability List, Source Description or Framework Notification. */
  capabilities?: { capability: string; loc: string }[];
}

/** Reads a document through and describes it. Throws on unreadable input. */
export async function inspectInput(input: string): Promise<Inspection> {
  const reader = await openDocument(input);
  const { header, kind } = reader;
  const md = header.md ?? {};
  const out: Inspection = {
    input,
    kind: kind?.id ?? null,
    name: kind?.name ?? null,
    root: header.root,
    capability: md.capability ?? null,
    links: header.ln.map((l) => ({ rel: l.rel ?? '', href: l.href ?? '' })),
    entries: 0,
  };
  for (const t of ['at', 'completed', 'from', 'until'] as const) {
    const v = md[t];
    if (v !== undefined) out[t] = v;
  }
  const changes: Record<string, number> | undefined = kind?.entry.change === 'required' ? {} : undefined;
  const parts: string[] | undefined = header.root === 'sitemapindex' ? [] : undefined;
  const capabilities: { capability: string; loc: string }[] | undefined = kind?.entry.capability !== undefined ? [] : undefined;
  if (changes) out.changes = changes;
  if (parts) out.parts = parts;
  if (capabilities) out.capabilities = capabilities;
  for await (const e of reader.entries) {
    out.entries++;
    if (changes) {
      const c = e.md?.change ?? '(none)';
      changes[c] = (changes[c] ?? 0) + 1;
    }
    if (parts) parts.push(e.loc);
    if (capabilities && e.md?.capability !== undefined) capabilities.push({ capability: e.md.capability, loc: e.loc });
  }
  return out;
}

function describe(i: Inspection): string {
  const lines = [`${i.input}: ${i.name ?? 'unknown document'} (capability ${i.capability ?? '(none)'}, <${i.root}>)`];
  for (const t of ['at', 'completed', 'from', 'until'] as const) if (i[t] !== undefined) lines.push(`  ${t}: ${i[t]}`);
  for (const l of i.links) lines.push(`  link ${l.rel}: ${l.href}`);
  lines.push(`  entries: ${i.entries}`);
  if (i.changes) {
    const list = Object.entries(i.changes).map(([k, n]) => `${k} ${n}`);
    lines.push(`  changes: ${list.length ? list.join(', ') : 'none'}`);
  }
  if (i.parts) for (const p of i.parts) lines.push(`  part: ${p}`);
  if (i.capabilities) for (const c of i.capabilities) lines.push(`  capability ${c.capability}: ${c.loc}`);
  return `${lines.join('\n')}\n`;
}

/** Runs the command; returns the exit status. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('inspect', args, { json: { type: 'boolean' } }, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) return usageError('inspect', 'give exactly one document');
  const input = positionals[0]!;
  try {
    const info = await inspectInput(input);
    stdout.write(values.json ? `${JSON.stringify(info)}\n` : describe(info));
    return 0;
  } catch (err) {
    const issue = errorIssue(err);
    if (values.json) stdout.write(`${JSON.stringify({ input, error: issue })}\n`);
    else stderr.write(`${formatIssue(input, issue)}\n`);
    return 1;
  }
}
