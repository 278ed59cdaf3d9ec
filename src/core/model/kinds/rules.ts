/**
 * The shape of a document kind and of the rules it states: what its root element and top-level
 * `rs:md` carry, what its entries carry, its links, and the order of its entries. Each family of documents
 * states its kinds in a file of this folder (`resource-list.ts`, `change-dump.ts`…), with section citations;
 * `document-kinds.ts` gathers them. The validator, the Source's builders and the Destination read these rules
 * instead of lists of kind ids.
 * @see Z39.99 §6.1 (a document is a root element plus a capability), Appendix A (Table 4)
 */
import type { RootElement } from '../types.js';

export type DocumentKindId =
  | 'source-description'
  | 'source-description-index'
  | 'capability-list'
  | 'capability-list-index'
  | 'resource-list'
  | 'resource-list-index'
  | 'resource-dump'
  | 'resource-dump-index'
  | 'resource-dump-manifest'
  | 'change-list'
  | 'change-list-index'
  | 'change-dump'
  | 'change-dump-index'
  | 'change-dump-manifest'
  | 'resource-list-archive'
  | 'resource-list-archive-index'
  | 'resource-dump-archive'
  | 'resource-dump-archive-index'
  | 'change-list-archive'
  | 'change-list-archive-index'
  | 'change-dump-archive'
  | 'change-dump-archive-index'
  | 'change-notification'
  | 'framework-notification';

/** A time attribute of the top-level `rs:md`. */
export type TimeAttribute = 'at' | 'completed' | 'from' | 'until';

/**
 * The time attributes of the top-level `rs:md` (Appendix A, Table 4, columns 1–2): the ones it must carry,
 * the ones it must not, and the missing ones lenient reading tolerates (producers in the wild leave them off).
 */
export interface TopTimes {
  required: readonly TimeAttribute[];
  forbidden: readonly TimeAttribute[];
  toleratedMissing: readonly TimeAttribute[];
}

/** The use of an attribute or element: `undefined` where the document's rules say nothing of it (not checked). */
export type Use = 'required' | 'recommended' | 'allowed' | 'forbidden';

/** What the entries (`<url>` or `<sitemap>`) of a kind carry. */
export interface EntryRules {
  /** `rs:md/@at` (and `completed`) of an entry (Table 4, column 3). */
  at?: Use;
  /** `rs:md/@from` (and `until`) of an entry (Table 4, column 4). */
  from?: Use;
  /** `<lastmod>` (Table 4, column 5): `required-1.0` where 1.0 times changes by it; `discouraged` where it has no meaning. */
  lastmod: 'required-1.0' | 'discouraged' | 'allowed';
  /** `rs:md/@change`. */
  change: 'required' | 'forbidden';
  /** `rs:md/@datetime` (ResourceSync 1.1): allowed in documents of changes. */
  datetime: boolean;
  /** `rs:md/@path` of a manifest: on every entry, on every entry but deletions, or none. */
  path: 'all' | 'not-deleted' | 'forbidden';
  /** `rs:md/@type` is recommended (manifests: the type of each bitstream). */
  typeRecommended: boolean;
  /** A package entry of a dump: `type` and `length` recommended. */
  packageMetadata: boolean;
  /**
   * `rs:md/@capability` of entries: each a Capability List (`capabilitylist`), each capability advertised
   * once (`advertised`), a capability with a change Table 2 allows (`framework`), or not checked.
   */
  capability?: 'capabilitylist' | 'advertised' | 'framework';
  /** Each `loc` once (reported for the first 50,000). */
  uniqueLocs: boolean;
}

/**
 * The order of entries: changes by their time (`datetime`, or `lastmod` under 1.0), an index's lists, a
 * dump's packages and an archive's documents by `from`, forward chronological.
 */
export type EntryOrder = 'change' | 'index' | 'package' | 'archive';

/** Links of the top level. */
export interface LinkRules {
  /** `<rs:ln rel="up">`: required (to `upTo`), optional, or forbidden. @see Z39.99 §6.2 */
  up: 'required' | 'optional' | 'forbidden';
  /** The kind the `up` link points to. */
  upTo?: DocumentKindId;
  /** `<rs:ln rel="describedby">` is required, describing this (e.g. "the Source"). */
  describedby?: string;
  /** The index this document may be a part of, its `index` link's target. @see Z39.99 §6.2 */
  index?: DocumentKindId;
  /** The archive that lists this document once it is past, its `archives` link's target. @see ResourceSync Archives §2 */
  archives?: DocumentKindId;
}

/** Every ResourceSync document, named in the spec's words, with the rules that identify and govern it. */
export interface DocumentKind {
  /** Stable identifier in the spec's words, kebab-case. */
  id: DocumentKindId;
  /** The spec's name, e.g. "Change List Index". */
  name: string;
  root: RootElement;
  /** Value of the top-level `rs:md capability`. */
  capability: string;
  /** Section of Z39.99 (or companion spec) that defines it. */
  section: string;
  /** The citation of its rules, e.g. `Z39.99 §12.1`, `ResourceSync Archives §5`. */
  citation: string;
  /** Which family of time attributes it uses: snapshot (`at`/`completed`) or interval (`from`/`until`). */
  time: 'at' | 'from' | 'none';
  /** The family of documents it belongs to. */
  family: 'description' | 'capability' | 'list' | 'dump' | 'manifest' | 'archive' | 'notification';
  top: TopTimes;
  entry: EntryRules;
  links: LinkRules;
  order?: EntryOrder;
  /** A dump's packages: the kind of the manifest (`manifest.xml`) at the top of each. @see Z39.99 §11.2, §13.2 */
  manifest?: DocumentKindId;
}

/** Rules of a kind that says nothing more: no time attributes, entries without change, path or capability. */
const NONE: Pick<DocumentKind, 'top' | 'entry' | 'links'> = {
  top: { required: [], forbidden: [], toleratedMissing: [] },
  entry: {
    lastmod: 'allowed',
    change: 'forbidden',
    datetime: false,
    path: 'forbidden',
    typeRecommended: false,
    packageMetadata: false,
    uniqueLocs: false,
  },
  links: { up: 'required', upTo: 'capability-list' },
};

/** A snapshot's top level: `at` mandatory (Table 4), `from`/`until` not its family. */
export const SNAPSHOT_TOP: TopTimes = { required: ['at'], forbidden: ['from', 'until'], toleratedMissing: ['at'] };
/** A period's top level: `from` mandatory (Table 4), `at`/`completed` not its family. */
export const INTERVAL_TOP: TopTimes = {
  required: ['from'],
  forbidden: ['at', 'completed'],
  toleratedMissing: ['from'],
};

/** A kind from what it states; what it leaves out is the rule of a kind that says nothing of it. */
export function kind(
  k: Omit<DocumentKind, 'top' | 'entry' | 'links'> & {
    top?: TopTimes;
    entry?: Partial<EntryRules>;
    links?: LinkRules;
  },
): DocumentKind {
  return { ...k, top: k.top ?? NONE.top, entry: { ...NONE.entry, ...k.entry }, links: k.links ?? NONE.links };
}
