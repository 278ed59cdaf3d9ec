/**
 * How the HTTP client classifies what went wrong: statuses worth a retry or meaning "unavailable now", the wait a
 * `Retry-After` asks for, and transport failures (timeouts, aborts, network errors) as `ResourceSyncError`s.
 */
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';

/** A status worth retrying: 5xx except 501/505, and 429. */
export function retryableStatus(status: number): boolean {
  return status === 429 || status === 408 || (status >= 500 && status !== 501 && status !== 505);
}

/**
 * A status by which a server says it cannot answer now (any 5xx, and 429 Too Many Requests): the Source is
 * unavailable and may answer later, which is not the same as a Source that holds no ResourceSync document.
 */
export function unavailableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/** Milliseconds asked for by a `Retry-After` header (seconds or HTTP-date), if any. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

/** A connect, headers or body timeout. */
function isTimeout(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT';
}

/** An abort by a signal, by undici or by the client itself. */
function isAbort(err: unknown): boolean {
  const e = err as { name?: string; code?: string } | null;
  return e?.name === 'AbortError' || e?.code === 'UND_ERR_ABORTED' || e?.code === 'ABORT_ERR';
}

/** `err` as the `ResourceSyncError` a caller sees: aborted, timed out (recoverable) or a network failure (recoverable). */
export function wrapError(err: unknown, url: string, phase: 'request' | 'body'): ResourceSyncError {
  if (isResourceSyncError(err)) return err;
  if (isAbort(err)) return new ResourceSyncError('RS_ABORTED', `URL '${url}' was not fetched: aborted.`, { data: { url }, cause: err });
  const code = (err as { code?: string } | null)?.code;
  if (isTimeout(err)) {
    return new ResourceSyncError('RS_HTTP_TIMEOUT', `URL '${url}' timed out (${phase}${code ? `, ${code}` : ''}).`, { data: { url, phase }, cause: err, recoverable: true });
  }
  return new ResourceSyncError('RS_NETWORK', `URL '${url}' failed (${phase}): ${causeOf(err)}.`, { data: { url, phase, code }, cause: err, recoverable: true });
}

/** A one-line cause for a transport failure, for messages a person reads. */
function causeOf(err: unknown): string {
  const code = (err as { code?: string } | null)?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found (DNS)';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection closed by the server';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return messageOf(err);
  }
}
