/**
 * The HTML discovery link of a published set: HTML resources are listed, hashed and packaged with
 * `<link rel="resourcesync">` inserted, the bytes a server with `htmlDiscoveryLink` serves. @see Z39.99 §6.3.3
 */
import { HTML_LINK_MEDIA_TYPE, withResourceSyncLink } from '../core/html-discovery.js';
import { mediaType } from '../core/media-type.js';

/** For a resource path, the function from its stored to its published bytes, or undefined. */
export type Rewrite = (path: string) => ((stored: Buffer) => Uint8Array) | undefined;

/**
 * The HTML discovery link of a set: HTML resources up to {@link HTML_LINK_MAX_BYTES} are published with
 * `<link rel="resourcesync">` to the Capability List. @see Z39.99 §6.3.3
 */
export function htmlRewrite(capUrl: string): Rewrite {
  const add = (stored: Buffer): Uint8Array => withResourceSyncLink(stored, capUrl);
  return (path) => (mediaType(path) === HTML_LINK_MEDIA_TYPE ? add : undefined);
}
