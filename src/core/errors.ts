/**
 * One error class with a stable code, structured data and a cause.
 * Codes never change meaning; match on `code`, never on `message`.
 */

export type ErrorCode =
  // reading documents
  | 'RS_XML_MALFORMED'
  | 'RS_XML_DTD_FORBIDDEN'
  | 'RS_XML_ENCODING'
  | 'RS_XML_TRUNCATED'
  | 'RS_XML_EMPTY'
  | 'RS_LIMIT_BYTES'
  | 'RS_LIMIT_ENTRIES'
  | 'RS_LIMIT_DEPTH'
  | 'RS_LIMIT_VALUE'
  | 'RS_LIMIT_ATTRIBUTES'
  | 'RS_NOT_RESOURCESYNC'
  | 'RS_INVALID_DOCUMENT'
  | 'RS_INVALID_DATETIME'
  | 'RS_INVALID_ARGUMENT'
  // an inventory given as records (a JSON-lines feed, a database query): `data.line`, `data.field`
  | 'RS_INVALID_FEED'
  // a database query given as an inventory failed: `data.sqlstate`
  | 'RS_QUERY'
  // network and files
  | 'RS_HTTP_STATUS'
  | 'RS_HTTP_TIMEOUT'
  | 'RS_NETWORK'
  | 'RS_IO'
  // push over XMPP: a stream, SASL or stanza error (`data.condition`, e.g. `not-authorized`, `item-not-found`)
  | 'RS_XMPP'
  // an OAI-PMH repository answered with an error or broke the protocol (`data.oaiCode`, e.g. `badArgument`)
  | 'RS_OAI_PMH'
  // destination safety and verification
  | 'RS_UNSAFE_PATH'
  | 'RS_AUTHORITY'
  | 'RS_HASH_MISMATCH'
  | 'RS_LENGTH_MISMATCH'
  | 'RS_LOCKED'
  | 'RS_ABORTED'
  | 'RS_ZIP'
  // a WARC package or file that is malformed: a truncated or misframed record, a broken gzip member
  | 'RS_WARC'
  // links (Z39.99 §14)
  | 'RS_PATCH';

export interface ResourceSyncErrorOptions {
  /** Structured details: url, path, expected, actual, line… */
  data?: Record<string, unknown>;
  cause?: unknown;
  /** Whether a sync may go on with other resources after this error. Default false. */
  recoverable?: boolean;
}

export class ResourceSyncError extends Error {
  readonly code: ErrorCode;
  readonly data: Record<string, unknown>;
  readonly recoverable: boolean;

  constructor(code: ErrorCode, message: string, options: ResourceSyncErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ResourceSyncError';
    this.code = code;
    this.data = options.data ?? {};
    this.recoverable = options.recoverable ?? false;
  }
}

/** True when `err` is a ResourceSyncError, optionally with the given code. */
export function isResourceSyncError(err: unknown, code?: ErrorCode): err is ResourceSyncError {
  return err instanceof ResourceSyncError && (code === undefined || err.code === code);
}

/**
 * The message of anything thrown: an Error's `message`, anything else as a string.
 * @example messageOf(new Error('no such file')) // 'no such file'; messageOf('gone') // 'gone'
 */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Anything thrown as an Error: an Error as it is, a string as its message, anything else as its JSON. */
export function toError(e: unknown): Error {
  return e instanceof Error ? e : new Error(typeof e === 'string' ? e : JSON.stringify(e));
}
