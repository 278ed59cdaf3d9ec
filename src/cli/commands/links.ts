/**
 * `resourcesync links <dest-dir> [<url-or-path>] [--rel REL]... [--json]`: the §14 links a mirror keeps for its
 * resources (alternate, canonical, memento, timegate, timemap, describedby, describes, collection, via, profile),
 * read from its state; nothing is fetched or changed.
 * @see Z39.99 §14
 */
import { stderr, stdout } from 'node:process';
import { keptLinks, type ResourceLinks } from '../../destination/kept-links.js';
import { KEPT_RELATIONS, type KeptRelation } from '../../destination/links.js';
import { isResourceSyncError } from '../../core/errors.js';
import { parseCommandArgs, usageError } from '../command-args.js';
import { EXIT, reportFailure } from '../mirror-options.js';
import { STATE_HELP, STATE_OPTIONS, openStateChoice, stateChoice, type OpenedState, type StateChoice } from '../state-option.js';

const HELP = `Usage: resourcesync links <dest-dir> [<url-or-path>] [options]

Show the links (Z39.99 §14) that a mirror keeps for its resources, read from its state in
<dest-dir>/.resourcesync/ (or where --state says): ${KEPT_RELATIONS.join(', ')}.
Without <url-or-path>, every resource that has such links; with it, the resource of that URL or
of that path in the mirror. Nothing is fetched or changed.

Options:
  --rel REL      only this relation; repeatable
  --json         one JSON object per resource and line: {"url","path","links":{REL:[{"href",…}]}}
${STATE_HELP}
  -h, --help     show this help

Exit codes:
  0  done
  1  the resource asked for is not in the mirror
  2  usage error, or <dest-dir> holds no mirror
  3  the --state database cannot be reached, refused the login or does not exist
`;

function describe(r: ResourceLinks): string {
  const lines = [`${r.path}  ${r.url}`];
  for (const [rel, refs] of Object.entries(r.links)) {
    for (const ref of refs) {
      const attrs = (['type', 'length', 'hash', 'modified', 'pri'] as const).flatMap((k) =>
        ref[k] !== undefined ? [`${k} ${ref[k]}`] : [],
      );
      lines.push(`  ${rel.padEnd(11)} ${ref.href}${attrs.length > 0 ? `  (${attrs.join(', ')})` : ''}`);
    }
  }
  if (lines.length === 1) lines.push('  (no links kept)');
  return `${lines.join('\n')}\n`;
}

/** `resourcesync links`: reads the state and prints the links kept. */
export function run(args: string[]): Promise<number> {
  return links(args);
}

async function links(args: string[]): Promise<number> {
  const parsed = parseCommandArgs(
    'links',
    args,
    { rel: { type: 'string', multiple: true }, json: { type: 'boolean' }, ...STATE_OPTIONS },
    HELP,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [dest, select] = positionals;
  if (dest === undefined || positionals.length > 2) return usageError('links', 'expected <dest-dir> [<url-or-path>]');
  const rels = values.rel ?? [];
  const unknown = rels.find((r) => !(KEPT_RELATIONS as readonly string[]).includes(r));
  if (unknown !== undefined)
    return usageError('links', `--rel '${unknown}' is not one of ${KEPT_RELATIONS.join(', ')}`);
  let choice: StateChoice;
  try {
    choice = stateChoice(values, dest);
  } catch (err) {
    return usageError('links', err);
  }
  let shown = 0;
  let opened: OpenedState | undefined;
  try {
    opened = await openStateChoice(choice, dest, { readonly: true });
    for await (const found of keptLinks(dest, select, opened.state === undefined ? {} : { state: opened.state })) {
      const r =
        rels.length === 0
          ? found
          : {
              ...found,
              links: Object.fromEntries(
                Object.entries(found.links).filter(([rel]) => rels.includes(rel as KeptRelation)),
              ),
            };
      if (select === undefined && Object.keys(r.links).length === 0) continue;
      stdout.write(values.json === true ? `${JSON.stringify(r)}\n` : describe(r));
      shown++;
    }
  } catch (err) {
    if (isResourceSyncError(err, 'RS_INVALID_ARGUMENT')) return usageError('links', err);
    reportFailure('links', err, values.json);
    return EXIT.ERROR;
  } finally {
    await opened?.close();
  }
  if (select !== undefined && shown === 0) {
    stderr.write(`resourcesync links: '${select}' is not in the mirror '${dest}'.\n`);
    return EXIT.INCOMPLETE;
  }
  return EXIT.OK;
}
