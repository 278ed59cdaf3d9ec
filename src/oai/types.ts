/**
 * The model of OAI-PMH 2.0 responses as the client hands them out: headers, records, the repository's
 * Identify answer, metadata formats, sets and resumption tokens, named with the protocol's words.
 * @see OAI-PMH 2.0 §2.5 (deleted records), §2.7 (datestamps, granularity), §3.5 (flow control), §4 (verbs)
 */

/** The OAI-PMH 2.0 namespace. @see OAI-PMH 2.0 §3.2 */
export const OAI_NS = 'http://www.openarchives.org/OAI/2.0/';

/** What a repository says of deleted records. @see OAI-PMH 2.0 §2.5.1 */
export type DeletedRecordSupport = 'no' | 'transient' | 'persistent';

/** The finest datestamp a repository supports: day or second. @see OAI-PMH 2.0 §3.3.2 */
export type Granularity = 'YYYY-MM-DD' | 'YYYY-MM-DDThh:mm:ssZ';

/** The header of an item's record. @see OAI-PMH 2.0 §2.5 */
export interface OaiHeader {
  /** The item's unique identifier. */
  identifier: string;
  /** The datestamp as the repository wrote it (`YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ssZ`). */
  datestamp: string;
  /** The datestamp in milliseconds since the epoch (UTC; midnight for a day datestamp). */
  time: number;
  /** True for `status="deleted"`: the record is no longer available. */
  deleted: boolean;
  /** The sets the item belongs to. */
  setSpecs: string[];
}

/** A record: its header and, unless deleted, its metadata. @see OAI-PMH 2.0 §2.5 */
export interface OaiRecord extends OaiHeader {
  /**
   * The single child element of `<metadata>` as a standalone XML document (an XML declaration, the element with
   * the namespace declarations it needs, a final newline); undefined for a deleted record.
   */
  metadata?: string;
}

/** The answer to `Identify`. @see OAI-PMH 2.0 §4.2 */
export interface OaiIdentify {
  repositoryName: string;
  baseURL: string;
  protocolVersion: string;
  adminEmail: string[];
  earliestDatestamp: string;
  deletedRecord: DeletedRecordSupport;
  granularity: Granularity;
  /** The `responseDate` of the answer: the repository's clock when it answered. */
  responseDate?: string;
}

/** One of the formats a repository disseminates. @see OAI-PMH 2.0 §4.4 */
export interface OaiMetadataFormat {
  metadataPrefix: string;
  schema: string;
  metadataNamespace: string;
}

/** One set of the repository. @see OAI-PMH 2.0 §4.6 */
export interface OaiSet {
  setSpec: string;
  setName: string;
}

/** A resumption token as the repository sent it. @see OAI-PMH 2.0 §3.5 */
export interface ResumptionToken {
  /** The token; empty on the last page of a list. */
  value: string;
  expirationDate?: string;
  completeListSize?: number;
  cursor?: number;
}

/** Selective harvesting arguments of the list verbs. @see OAI-PMH 2.0 §2.7 (from, until), §2.7.2 (set) */
export interface ListArguments {
  /** `metadataPrefix` (required for ListRecords and ListIdentifiers). */
  metadataPrefix: string;
  /** Lower bound of datestamps, at the repository's granularity. */
  from?: string;
  /** Upper bound of datestamps, at the repository's granularity. */
  until?: string;
  /** A setSpec. */
  set?: string;
}

/**
 * Parses an OAI-PMH datestamp, `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDThh:mm:ssZ` (a fraction of a second is
 * tolerated); undefined when it is neither.
 * @see OAI-PMH 2.0 §3.3.1 (UTCdatetime)
 * @example parseDatestamp('2024-03-01') // 1709251200000
 */
export function parseDatestamp(value: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?Z)?$/.exec(value.trim());
  if (m === null) return undefined;
  const [y, mo, d, h = '0', mi = '0', s = '0'] = m.slice(1, 7).map((x) => x ?? '0');
  const t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  const back = new Date(t);
  if (back.getUTCDate() !== Number(d) || back.getUTCMonth() !== Number(mo) - 1 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(m[7]) * 1000);
  return t + fraction;
}

/**
 * Writes a time as a datestamp at a granularity: `YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ssZ` (truncated, never rounded up).
 * @see OAI-PMH 2.0 §3.3.1
 * @example formatDatestamp(1709251200000, 'YYYY-MM-DD') // '2024-03-01'
 */
export function formatDatestamp(time: number, granularity: Granularity): string {
  const iso = new Date(Math.floor(time / 1000) * 1000).toISOString();
  return granularity === 'YYYY-MM-DD' ? iso.slice(0, 10) : `${iso.slice(0, 19)}Z`;
}
