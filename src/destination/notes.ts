/**
 * The Destination's notes and warnings: what discovery tried, what a sync or an audit skipped, tolerated or could
 * not do. Each is `{ code, severity, message, data }` like the validator's issues: `code` is a stable kebab-case
 * string, `data` holds the values (URLs, times, counts) and `message` is the sentence made from them by the one
 * table below. Match on `code` and read `data`, never the message.
 * @see Z39.99 §5.2 (Destination), §6.3 (discovery), §12.1 (Change Lists), §13 (Change Dumps)
 */
import type { IssueCode } from '../core/validate/codes.js';

/** `warning`: something was skipped, ignored, tolerated or failed. `note`: how discovery went, what was tried. */
export type NoteSeverity = 'note' | 'warning';

/** What a sync does after it found that changes were missed. */
export type GapRemedy = 'archive' | 'baseline' | 'lag' | 'partial' | 'none';

const GAP_REMEDY: { readonly [R in GapRemedy]: (d: GapData) => string } = {
  none: () => '',
  archive: (d) => ` Catching up from the ${d.dumps === true ? 'Change Dump' : 'Change List'} Archive '${d.archive ?? ''}'.`,
  baseline: () => ' Falling back to a baseline.',
  lag: (d) => ` The mirror holds the snapshot of '${d.snapshot ?? ''}' and may lag until the next baseline.`,
  partial: () => ' The changes since the Change Dumps are not all on offer.',
};

/** The data of `changes-missed`: where the changes on offer start and where the Destination stands. */
export interface GapData {
  /** The Change List (Index) or Change Dump whose changes start too late. */
  url: string;
  /** The earliest change on offer. */
  start: string;
  /** The last change processed (the cursor). */
  cursor: string;
  /** True for Change Dump packages, false or absent for Change Lists. */
  dumps?: boolean;
  /** What the sync does about it; absent when the gap is only reported. */
  remedy?: GapRemedy;
  /** The archive read to catch up (`remedy: 'archive'`). */
  archive?: string;
  /** The `at` of the snapshot the mirror holds (`remedy: 'lag'`). */
  snapshot?: string;
}

/** One row of `NOTES`: the severity, what the code means, and how its message is made from its data. */
export interface NoteDefinition<D> {
  severity: NoteSeverity;
  /** What the code means, for the documentation's table (docs/destination.md). */
  meaning: string;
  message: (data: D) => string;
}

const row = <D>(severity: NoteSeverity, meaning: string, message: (data: D) => string): NoteDefinition<D> => ({ severity, meaning, message });

/**
 * Every note code with its severity, meaning and message: the one message table.
 * @see docs/destination.md (the table of codes)
 */
export const NOTES = {
  // discovery (§6.3)
  'discovery-tried-well-known': row<{ start: string; url: string; origin: boolean }>('note', 'the well-known URI was tried (§6.3.2)', (d) =>
    d.origin ? `Start '${d.start}' is an origin: tried the well-known URI '${d.url}' (§6.3.2).` : `Nothing found at '${d.start}': tried the well-known URI '${d.url}' (§6.3.2).`,
  ),
  'discovery-tried-robots': row<{ url: string }>('note', "robots.txt's Sitemap directives were tried (§6.3.4)", (d) => `Tried the Sitemap directives of '${d.url}' (§6.3.4).`),
  'discovery-link': row<{ url: string; target: string; via: 'html' | 'link-header' }>('note', 'a page or response links to a ResourceSync document (§6.3.3)', (d) =>
    d.via === 'html' ? `'${d.url}' links to '${d.target}' with <link rel="resourcesync"> (§6.3.3).` : `'${d.url}' links to '${d.target}' in a Link header (§6.3.3).`,
  ),
  'discovery-up': row<{ url: string; kind: string; up: string }>('note', "a document's `up` link was followed (§6.2)", (d) => `'${d.url}' (${d.kind}) points up to '${d.up}' (§6.2).`),
  'discovery-index': row<{ url: string; kind: string; index: string }>('note', "a document without `up` link: its `index` link was followed (§6.2)", (d) =>
    `'${d.url}' (${d.kind}) has no 'up' link: followed its 'index' '${d.index}' (§6.2).`,
  ),
  'capability-list-up': row<{ url: string; up: string }>('note', 'a Capability List points up to its Source Description (§6.2)', (d) =>
    `Capability List '${d.url}' points up to the Source Description '${d.up}' (§6.2).`,
  ),
  'set-of-its-own': row<{ url: string }>('note', 'no Capability List is reachable from a document: it is a capability set of its own', (d) =>
    `No Capability List reachable from '${d.url}': using it as a set of its own.`,
  ),
  'http-status': row<{ url: string; status: number }>('note', 'a document answered an HTTP status other than 200', (d) => `'${d.url}' answered HTTP ${d.status}.`),
  'not-source-description': row<{ url: string; capability: string }>('warning', 'the well-known URI holds something else than a Source Description', (d) =>
    `'${d.url}' is not a Source Description (capability '${d.capability}').`,
  ),
  'source-description-entry-skipped': row<{ url: string; capability: string }>('warning', "a Source Description entry is not a Capability List: skipped", (d) =>
    `Source Description entry '${d.url}' has capability '${d.capability}', not 'capabilitylist': skipped.`,
  ),
  'source-description-entry-as-capability-list': row<{ url: string; capability: string }>('warning', "a Source Description entry with capability 'resourcelist': read as a Capability List", (d) =>
    `Source Description entry '${d.url}' has capability '${d.capability}': read as a Capability List.`,
  ),
  'sitemap-ignored': row<{ url: string }>('warning', 'a Sitemap without a ResourceSync capability: ignored', (d) => `'${d.url}' is a Sitemap without a ResourceSync capability: ignored.`),
  'not-in-capability-list': row<{ url: string }>('warning', 'a document is not listed in the Capability List it points up to', (d) =>
    `'${d.url}' is not listed in the Capability List it points up to.`,
  ),
  'capability-entry-invalid': row<{ url: string }>('warning', 'a Capability List entry has no capability or no valid `loc`: skipped', (d) =>
    `Capability List '${d.url}' has an entry without a capability or a valid loc: skipped.`,
  ),
  'capability-unknown': row<{ url: string; capability: string }>('warning', 'a Capability List advertises a capability the standard does not define: ignored', (d) =>
    `Capability List '${d.url}' advertises unknown capability '${d.capability}': ignored.`,
  ),
  'capability-legacy-name': row<{ url: string; capability: string; name: string }>('warning', 'a Capability List uses a 1.0-era capability name: read as the current one', (d) =>
    `Capability List '${d.url}' advertises '${d.capability}' (a 1.0-era name): read as '${d.name}'.`,
  ),
  'capability-list-several': row<{ url: string; capability: string }>('warning', 'a Capability List advertises several documents of one capability: the first is used', (d) =>
    `Capability List '${d.url}' advertises several ${d.capability} documents; the first is used.`,
  ),
  'discovery-depth-limit': row<{ url: string; maxDepth: number }>('warning', 'a link lies deeper than discovery follows: not followed', (d) => `'${d.url}' is deeper than ${d.maxDepth} links: not followed.`),
  'discovery-document-limit': row<{ url: string; maxDocuments: number }>('warning', 'discovery fetched as many documents as it may: not fetched', (d) =>
    `'${d.url}' not fetched: the limit of ${d.maxDocuments} documents was reached.`,
  ),
  'outside-authority': row<{ url: string }>('warning', 'a link leads outside the authority: not fetched', (d) => `'${d.url}' is outside the authority: not fetched.`),
  'fetch-failed': row<{ url: string; error: string; errorCode?: string }>('warning', 'a request failed (network, timeout, refused)', (d) => `'${d.url}' failed: ${d.error}`),
  'document-unreadable': row<{ url: string; error: string }>('warning', 'a response is not a readable ResourceSync document', (d) =>
    `'${d.url}' is not a readable ResourceSync document: ${d.error}`,
  ),
  // documents read by a sync (lenient validation, §7)
  'document-issues': row<{ url: string; issue: IssueCode; section: string; issueMessage: string; line?: number; count: number }>(
    'warning',
    'lenient validation of a document found or tolerated an issue (the validator\'s `issue` code, `count` times)',
    (d) => `Document '${d.url}'${d.line !== undefined ? ` (line ${d.line})` : ''}: ${d.issueMessage} [${d.issue}, ${d.section}${d.count > 1 ? `, ${d.count} times` : ''}].`,
  ),
  // baseline and incremental sync (§5.2, §10, §12)
  'index-part-not-resource-list': row<{ url: string; part: string; kind?: string }>('warning', 'a Resource List Index lists a document that is not a Resource List: skipped', (d) =>
    `Resource List Index '${d.url}' lists '${d.part}', which is not a Resource List (${d.kind ?? 'unknown kind'}); skipped.`,
  ),
  'index-part-not-change-list': row<{ url: string; part: string }>('warning', 'a Change List Index or Change List Archive lists a document that is not a Change List: skipped', (d) =>
    `'${d.url}' lists '${d.part}' as a Change List, which it is not; skipped.`,
  ),
  'index-part-unexpected': row<{ url: string; index: string; part: string; expected: string; kind?: string }>('warning', 'an index lists a document of another kind than the documents it groups: skipped', (d) =>
    `${d.index} '${d.url}' lists '${d.part}', which is not a ${d.expected} (${d.kind ?? 'unknown kind'}); skipped.`,
  ),
  'change-lists-out-of-order': row<{ url: string }>('warning', "a Change List Index does not list its Change Lists in forward chronological order: sorted by `from`", (d) =>
    `Change List Index '${d.url}' does not list its Change Lists in forward chronological order; sorted by 'from'.`,
  ),
  'changes-out-of-order': row<{ url: string }>('warning', 'a Change List is not in forward chronological order (§12.1): its changes were sorted by time', (d) =>
    `Change List '${d.url}' is not in forward chronological order (§12.1); its changes were sorted by time.`,
  ),
  'change-time-missing': row<{ url: string; loc: string }>('warning', 'a change has no readable `datetime` or `lastmod`: it is applied', (d) =>
    `Change List '${d.url}' has a change of '${d.loc}' without a readable datetime or lastmod; it is applied.`,
  ),
  'change-unknown': row<{ url: string; loc: string; change: string }>('warning', 'a change is neither created, updated nor deleted: treated as an update', (d) =>
    `Change List '${d.url}' has change '${d.change}' for '${d.loc}'; treated as an update.`,
  ),
  'changes-missed': row<GapData>('warning', 'the changes on offer start after the last change processed: `remedy` says what the sync does (archive, baseline, lag, partial)', (d) =>
    `The ${d.dumps === true ? 'Change Dump packages' : 'changes on offer'} at '${d.url}' start at '${d.start}', after the last change ${d.dumps === true ? 'applied' : 'processed'} '${d.cursor}': changes were missed.${GAP_REMEDY[d.remedy ?? 'none'](d)}`,
  ),
  'changed-after-list': row<{ url: string; point: string }>('warning', 'a resource changed or went away at the Source after the newest Change List applied: its later change settles it in the next run (not a failure)', (d) =>
    `'${d.url}' changed at the Source after '${d.point}', where this run stops: its later change is applied by the next run.`,
  ),
  'change-dump-failures': row<{ url: string; cursor: string }>('warning', 'a Change Dump had failures: the cursor stays', (d) => `Change Dump '${d.url}' had failures: the cursor stays at '${d.cursor}'.`),
  'outside-url-prefixes': row<{ count: number; prefixes: string[] }>('note', 'entries whose URL is outside the URL prefixes of the sync (`--url-prefix`) were left alone (`data.count`)', (d) =>
    `${d.count} entr${d.count === 1 ? 'y' : 'ies'} outside the URL prefixes (${d.prefixes.join(', ')}) left alone.`,
  ),
  'no-change-list': row<{ set: string }>('warning', 'a capability set offers no Change List or Change Dump: a new baseline is taken each time', (d) =>
    `Capability set '${d.set}' offers no Change List or Change Dump: a new baseline is taken.`,
  ),
  'no-resource-list': row<{ set: string; dumps: boolean }>('warning', 'a capability set offers no Resource List (or Resource Dump): every change on offer is applied', (d) =>
    d.dumps
      ? `Capability set '${d.set}' offers no Resource List or Resource Dump: every Change Dump on offer is applied.`
      : `Capability set '${d.set}' offers no Resource List: every change on offer is applied.`,
  ),
  'dry-run-without-dumps': row<{ set: string; planned: boolean }>('warning', 'a dry run does not download dumps: planned from the Resource List, or not at all', (d) =>
    d.planned
      ? 'A dry run does not download dumps: the plan comes from the Resource List.'
      : `A dry run does not download dumps, and capability set '${d.set}' offers no Resource List to plan from.`,
  ),
  'set-unusable': row<{ set: string; offered: string[] }>('warning', 'a capability set offers nothing a Destination can synchronize from: skipped', (d) =>
    `Capability set '${d.set}' offers ${d.offered.length > 0 ? d.offered.join(', ') : 'nothing'}: nothing to synchronize from; skipped.`,
  ),
  'deletions-not-inferred': row<Record<string, never>>('warning', 'a Resource List could not be read in full: no deletions were inferred', () =>
    'A Resource List could not be read in full: no deletions were inferred.',
  ),
  // dumps (§11, §13)
  'package-before-cursor': row<{ url: string }>('note', 'a Change Dump package ends at or before the cursor: skipped', (d) => `Package '${d.url}' ends at or before the cursor: skipped.`),
  'dump-loc-invalid': row<{ url: string; loc: string }>('note', 'a dump lists a package with an invalid `loc`: skipped', (d) => `Dump '${d.url}' has an invalid loc '${d.loc}': skipped.`),
  'packages-out-of-order': row<{ url: string }>('note', 'Change Dump packages are not in forward chronological order: applied sorted by `from`', () =>
    'Change Dump packages were not in forward chronological order: applied sorted by their from time.',
  ),
  'package-unverified': row<{ url: string }>('note', 'a package has no length or hash in the dump: not verified as a whole (its files still are)', (d) =>
    `Package '${d.url}' has no length or hash in the dump: not verified as a whole.`,
  ),
  // notifications (Change Notification 1.0.1)
  'notification-unreadable': row<{ error: string }>('warning', 'a notification could not be parsed: the Change List is read instead', (d) =>
    `A notification could not be read: ${d.error}`,
  ),
  'notification-not-change': row<{ kind: string }>('warning', 'a notification is not a Change Notification: ignored', (d) =>
    `A notification of kind '${d.kind}' was ignored: a Change Notification was expected.`,
  ),
  'notification-window-invalid': row<Record<string, never>>('warning', 'a Change Notification has no readable `from`/`until` window: the Change List is read instead (Change Notification §3)', () =>
    'A Change Notification without a readable from/until window: the Change List is read.',
  ),
  'notification-window-future': row<{ from?: string; until: string; received: string }>(
    'warning',
    'a Change Notification\'s window ends after the time it was received: it is not believed, and the Change List is read instead (Change Notification §3)',
    (d) => `A Change Notification whose window ends at ${d.until}, after it was received (${d.received}), was ignored: the Change List is read.`,
  ),
  'notification-entry-ignored': row<{ loc: string; reason: 'authority' | 'path' }>(
    'warning',
    'a Change Notification entry names a resource outside the Source\'s authority or a path outside the mirror: ignored',
    (d) => `Notification entry '${d.loc}' was ignored: ${d.reason === 'authority' ? 'its origin is not the Source\'s (nor allowed)' : 'it does not map to a safe path in the mirror'}.`,
  ),
  'change-list-behind': row<{ needed: string; cursor?: string; heldMs: number }>(
    'warning',
    'notifications were missed and the Change List does not hold their changes yet: the later notifications\' entries waited for it, then were applied; the cursor stays before the gap until the Change List holds it',
    (d) =>
      `The Change List does not yet hold the changes up to ${d.needed} that notifications missed (it reaches ${d.cursor ?? 'nothing'}): the later changes waited ${d.heldMs} ms, then were applied; the Change List is read again until it does.`,
  ),
  // audit (§5.2)
  'set-not-auditable': row<{ set: string }>('warning', 'a capability set offers no Resource List: it cannot be audited', (d) => `Capability set '${d.set}' offers no Resource List: it cannot be audited.`),
  'change-list-unreadable': row<{ url: string; error: string; errorCode?: string }>('warning', 'the Change List could not be read: the audit leaves out the changes after the Resource List', (d) =>
    `Change List '${d.url}' could not be read: changes after the Resource List are not included (${d.error}).`,
  ),
  'store-trusted': row<Record<string, never>>('warning', 'the audit compared with the state store, not the files', () => 'The state store was trusted: local files were not read.'),
} as const;

/** A note or warning code. */
export type NoteCode = keyof typeof NOTES;

/** Every code, in table order. */
export const NOTE_CODES = Object.keys(NOTES) as NoteCode[];

/** The values of one code's note. */
export type NoteData<C extends NoteCode> = Parameters<(typeof NOTES)[C]['message']>[0];

/**
 * A note or warning of the Destination. The union over the codes: narrowing on `code` types `data`.
 * @example { code: 'changes-out-of-order', severity: 'warning', data: { url: 'http://example.com/changelist.xml' },
 *   message: "Change List 'http://example.com/changelist.xml' is not in forward chronological order (§12.1); its changes were sorted by time." }
 */
export type DestinationNote = { [C in NoteCode]: { code: C; severity: NoteSeverity; message: string; data: NoteData<C> } }[NoteCode];

/** The `changes-missed` note: a gap between the cursor and the changes on offer. */
export type GapNote = Extract<DestinationNote, { code: 'changes-missed' }>;

/**
 * Makes the note of `code` from its data: its severity and message come from `NOTES`.
 * @example note('outside-authority', { url: 'http://elsewhere.example/cl.xml' }).message
 *   // "'http://elsewhere.example/cl.xml' is outside the authority: not fetched."
 */
export function note<C extends NoteCode>(code: C, data: NoteData<C>): DestinationNote {
  const def = NOTES[code] as unknown as NoteDefinition<NoteData<C>>;
  return { code, severity: def.severity, message: def.message(data), data } as DestinationNote;
}

/**
 * The note of a gap, with what the sync does about it.
 * @example gapNote({ url, start: '2026-01-02T00:00:00Z', cursor: '2026-01-01T00:00:00Z' }, 'baseline')
 */
export function gapNote(data: GapData, remedy?: GapRemedy): GapNote {
  const { remedy: _ignored, ...rest } = data;
  return note('changes-missed', remedy === undefined ? rest : { ...rest, remedy }) as GapNote;
}
