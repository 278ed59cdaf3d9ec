/**
 * The client side of SASL SCRAM (SCRAM-SHA-1, SCRAM-SHA-256) for ./xmpp-client.ts, without channel binding.
 * @see RFC 5802 §3, §5 (SCRAM), RFC 7677 (SCRAM-SHA-256), RFC 6120 §6 (SASL in XMPP)
 */
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { ResourceSyncError } from '../core/errors.js';

/** Highest iteration count accepted from a server (each costs the client a hash). @see RFC 5802 §5.1 (i) */
const MAX_ITERATIONS = 1_000_000;

const pbkdf2Async = promisify(pbkdf2);

function malformed(message: string): ResourceSyncError {
  return new ResourceSyncError('RS_XMPP', message, { data: { condition: 'malformed-request' }, recoverable: true });
}

export const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
export const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

/** SCRAM client (RFC 5802 §3, §5), without channel binding (gs2 header `n,,`). */
export class Scram {
  readonly #hash: 'sha1' | 'sha256';
  readonly #user: string;
  readonly #password: string;
  readonly #nonce: string;
  #firstBare = '';
  #serverSignature: Buffer | undefined;

  /** @param nonce the client nonce; default 18 random bytes in base64 */
  constructor(hash: 'sha1' | 'sha256', user: string, password: string, nonce = randomBytes(18).toString('base64')) {
    this.#hash = hash;
    this.#nonce = nonce;
    this.#user = user.replace(/=/g, '=3D').replace(/,/g, '=2C');
    this.#password = password.normalize('NFKC');
  }

  first(): string {
    this.#firstBare = `n=${this.#user},r=${this.#nonce}`;
    return `n,,${this.#firstBare}`;
  }

  /**
   * The client's final message, answering the server's first one. The key is derived off the main thread (up to
   * a million hashes, as the server asks), so the event loop goes on meanwhile.
   * @throws ResourceSyncError RS_XMPP (`malformed-request`)
   */
  async final(serverFirst: string): Promise<string> {
    const fields = new Map(serverFirst.split(',').map((kv) => [kv.slice(0, 1), kv.slice(2)] as const));
    const nonce = fields.get('r') ?? '';
    const salt = Buffer.from(fields.get('s') ?? '', 'base64');
    const iterations = Number(fields.get('i'));
    if (!nonce.startsWith(this.#nonce) || nonce.length === this.#nonce.length || salt.length === 0) {
      throw malformed('The SCRAM challenge of the XMPP server is malformed.');
    }
    if (!Number.isInteger(iterations) || iterations < 1 || iterations > MAX_ITERATIONS) {
      throw malformed(`The SCRAM iteration count of the XMPP server (${fields.get('i')}) is not acceptable.`);
    }
    const salted = await pbkdf2Async(this.#password, salt, iterations, this.#hash === 'sha1' ? 20 : 32, this.#hash);
    const clientKey = createHmac(this.#hash, salted).update('Client Key').digest();
    const storedKey = createHash(this.#hash).update(clientKey).digest();
    const withoutProof = `c=biws,r=${nonce}`;
    const authMessage = `${this.#firstBare},${serverFirst},${withoutProof}`;
    const signature = createHmac(this.#hash, storedKey).update(authMessage).digest();
    const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!));
    const serverKey = createHmac(this.#hash, salted).update('Server Key').digest();
    this.#serverSignature = createHmac(this.#hash, serverKey).update(authMessage).digest();
    return `${withoutProof},p=${proof.toString('base64')}`;
  }

  /** Checks the server's signature (`v=`) in its final message. */
  verify(serverFinal: string): boolean {
    const v = /(?:^|,)v=([^,]*)/.exec(serverFinal)?.[1];
    if (v === undefined || this.#serverSignature === undefined) return false;
    const got = Buffer.from(v, 'base64');
    return got.length === this.#serverSignature.length && timingSafeEqual(got, this.#serverSignature);
  }
}

