/**
 * `resourcesync validate [--spec 1.0|1.1] [--json] [--lenient] <file-or-url>...`
 *
 * Checks each document against Z39.99 and prints its issues as
 * `file:line: severity code: message [path] (section)`, then a summary line.
 * Exit status: 0 when no document has errors, 1 when one has errors or is not a readable ResourceSync
 * document, 2 on usage errors. `--json` prints `{ documents: [{ input, kind, entries, issues, valid }] }`.
 */
import { stdout } from 'node:process';
import { validate } from '../../core/validate/index.js';
import { errorIssue, openDocument, type CliIssue } from '../documents.js';
import { parseCommandArgs, usageError } from '../command-args.js';

const HELP = `Usage: resourcesync validate [--spec 1.0|1.1] [--json] [--lenient] <file-or-url>...

Checks ResourceSync documents against ANSI/NISO Z39.99 (1.1 by default).

Options:
  --spec 1.0|1.1   version of the standard (default 1.1)
  --lenient        accept what real producers publish; report it as warnings
  --json           print one JSON object on stdout
  -h, --help       show this help

Exit status: 0 no errors, 1 a document has errors or is unreadable, 2 usage error.
`;

/** The verdict on one document. */
export interface DocumentReport {
  input: string;
  /** Document kind id (e.g. `change-list`), or null when not identified. */
  kind: string | null;
  entries: number;
  issues: CliIssue[];
  valid: boolean;
}

/** Validates one input; never throws (read errors become issues). */
export async function validateInput(input: string, options: { spec: '1.0' | '1.1'; lenient: boolean }): Promise<DocumentReport> {
  let kind: string | null = null;
  try {
    const reader = await openDocument(input);
    kind = reader.kind?.id ?? null;
    const { issues, entries } = await validate(reader, { spec: options.spec, mode: options.lenient ? 'lenient' : 'strict' });
    return { input, kind, entries, issues, valid: !issues.some((i) => i.severity === 'error') };
  } catch (err) {
    return { input, kind, entries: 0, issues: [errorIssue(err)], valid: false };
  }
}

/** One issue as a line: `file:line: severity code: message [path] (section)`. */
export function formatIssue(input: string, i: CliIssue): string {
  const where = i.line !== undefined ? `${input}:${i.line}` : input;
  const path = i.path !== undefined ? ` [${i.path}]` : '';
  return `${where}: ${i.severity} ${i.code}: ${i.message}${path} (${i.section})`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Runs the command; returns the exit status. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('validate', args, { spec: { type: 'string' }, json: { type: 'boolean' }, lenient: { type: 'boolean' } }, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const spec = values.spec ?? '1.1';
  if (spec !== '1.0' && spec !== '1.1') return usageError('validate', `--spec must be 1.0 or 1.1, not '${spec}'`);
  if (positionals.length === 0) return usageError('validate', 'no document given');

  const reports: DocumentReport[] = [];
  for (const input of positionals) {
    const report = await validateInput(input, { spec, lenient: values.lenient === true });
    reports.push(report);
    if (!values.json) for (const i of report.issues) stdout.write(`${formatIssue(input, i)}\n`);
  }
  const invalid = reports.filter((r) => !r.valid).length;
  if (values.json) {
    stdout.write(`${JSON.stringify({ documents: reports })}\n`);
  } else {
    let errors = 0;
    let warnings = 0;
    for (const r of reports) {
      for (const i of r.issues) {
        if (i.severity === 'error') errors++;
        else warnings++;
      }
    }
    const verdict = invalid === 0 ? 'valid' : `${invalid} invalid`;
    stdout.write(`${plural(reports.length, 'document')} checked against Z39.99 ${spec}${values.lenient ? ' (lenient)' : ''}: ${verdict}, ${plural(errors, 'error')}, ${plural(warnings, 'warning')}\n`);
  }
  return invalid === 0 ? 0 : 1;
}
