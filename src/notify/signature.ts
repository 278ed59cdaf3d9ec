/**
 * `X-Hub-Signature`: the HMAC of a delivered body with the subscriber's `hub.secret`, written
 * `<method>=<hex>`. The hub signs with sha256 by default; sha1, sha384 and sha512 are the other
 * methods WebSub §7.1.1 names. @see WebSub §7.1 (Authenticated Content Distribution)
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Signature methods of WebSub §7.1.1, strongest last. */
export const SIGNATURE_METHODS = ['sha1', 'sha256', 'sha384', 'sha512'] as const;
export type SignatureMethod = (typeof SIGNATURE_METHODS)[number];

/** `hub.secret` must be less than 200 bytes. @see WebSub §5.1 */
export const MAX_SECRET_BYTES = 199;

/**
 * The value of `X-Hub-Signature` for `body`.
 * @example signBody('sha256', 's3cret', bytes) // 'sha256=5d0c…'
 */
export function signBody(method: SignatureMethod, secret: string, body: Uint8Array): string {
  return `${method}=${createHmac(method, secret).update(body).digest('hex')}`;
}

/**
 * Whether `header` is a valid signature of `body` under `secret`, by any method of WebSub §7.1.1
 * (compared in constant time). @see WebSub §7.1.2: a subscriber must ignore a body whose signature fails.
 */
export function verifySignature(header: string | null | undefined, secret: string, body: Uint8Array): boolean {
  if (header == null) return false;
  const eq = header.indexOf('=');
  const method = header.slice(0, eq).trim().toLowerCase();
  if (eq < 0 || !(SIGNATURE_METHODS as readonly string[]).includes(method)) return false;
  const given = Buffer.from(header.slice(eq + 1).trim(), 'hex');
  const expected = createHmac(method, secret).update(body).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}
