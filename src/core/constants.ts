/**
 * Namespaces, defined values and limits of ResourceSync (ANSI/NISO Z39.99).
 * @see Z39.99 §4 (namespaces), §7 (defined values), Sitemaps protocol (limits)
 */

/** @see Z39.99 §4 */
export const SITEMAP_NS = 'http://www.sitemaps.org/schemas/sitemap/0.9';
/** @see Z39.99 §4 */
export const RS_NS = 'http://www.openarchives.org/rs/terms/';
/** The relation type of a patch link. @see Z39.99 §14.4 */
export const REL_PATCH = 'http://www.openarchives.org/rs/terms/patch';
/** The Link relation type used for discovery. @see Z39.99 §6.3.3 */
export const REL_RESOURCESYNC = 'resourcesync';
/** @see Z39.99 §6.3.2 */
export const WELL_KNOWN_PATH = '/.well-known/resourcesync';

/**
 * The folder name this package keeps to itself: a Source's documents are published under `/.resourcesync/` (beside
 * its resources), a Destination keeps its state and staged files in `<dest>/.resourcesync/`, and no resource may be
 * written under it.
 */
export const RESOURCESYNC_DIR = '.resourcesync';

/** Capability values of the documents themselves (top-level `rs:md capability`). @see Z39.99 §7 */
export const DOCUMENT_CAPABILITIES = [
  'description',
  'capabilitylist',
  'resourcelist',
  'resourcedump',
  'resourcedump-manifest',
  'changelist',
  'changedump',
  'changedump-manifest',
  // ResourceSync Archives (D-Lib 2013; rs/archives)
  'resourcelist-archive',
  'resourcedump-archive',
  'changelist-archive',
  'changedump-archive',
  // ResourceSync Change Notification 1.0.1 / Framework Notification 1.0.1
  'change-notification',
  'framework-notification',
  'changelist-notification',
] as const;
export type DocumentCapability = (typeof DOCUMENT_CAPABILITIES)[number];

/** Capabilities that a Capability List may advertise. @see Z39.99 §9 */
export const CAPABILITY_LIST_ENTRIES = [
  'resourcelist',
  'resourcedump',
  'changelist',
  'changedump',
  'resourcelist-archive',
  'resourcedump-archive',
  'changelist-archive',
  'changedump-archive',
] as const;

/** @see Z39.99 §7 (`change` attribute) */
export const CHANGE_TYPES = ['created', 'updated', 'deleted'] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

/** @see Sitemaps protocol, Z39.99 §7 (`changefreq`) */
export const CHANGEFREQS = ['always', 'hourly', 'daily', 'weekly', 'monthly', 'yearly', 'never'] as const;

/** Relation types featured in Z39.99 §7 and §14. */
export const LINK_RELATIONS = [
  'up',
  'index',
  'describedby',
  'describes',
  'contents',
  'duplicate',
  'alternate',
  'canonical',
  REL_PATCH,
  'memento',
  'timegate',
  'timemap',
  'collection',
  'via',
  'archives',
  'resourcesync',
] as const;

/** `pri` bounds. @see Z39.99 §7 (`pri`) */
export const PRI_MIN = 1;
export const PRI_MAX = 999_999;

/** Known hash algorithms and their hex digest lengths. @see Z39.99 §7 (`hash`) */
export const HASH_ALGORITHMS = { md5: 32, 'sha-1': 40, 'sha-256': 64 } as const;
export type HashAlgorithm = keyof typeof HASH_ALGORITHMS;

/**
 * Default limits. The entry and size limits are the Sitemaps protocol's, which Z39.99 §7 adopts
 * ("the limit is 50,000 items per document and a document size of 50 MB"). The others guard the
 * parser against hostile input.
 */
export const LIMITS = {
  /** @see Z39.99 §7, Sitemaps protocol */
  maxEntries: 50_000,
  /** Uncompressed bytes. @see Z39.99 §7, Sitemaps protocol */
  maxBytes: 50 * 1024 * 1024,
  /** Element nesting depth. */
  maxDepth: 64,
  /** Characters in one attribute value or text node. */
  maxValueLength: 64 * 1024,
  /** Attributes on one element. */
  maxAttributes: 256,
  /** Sitemaps protocol: URLs must be less than 2,048 characters. */
  maxUrlLength: 2048,
} as const;
export type Limits = { -readonly [K in keyof typeof LIMITS]: number };
