/**
 * The one check every URL the package takes from outside passes first: absolute, `http:` or `https:`, and without
 * credentials (a URL with a user name or password is refused, never sent).
 * @example parseHttpUrl('https://example.org/a')?.origin // 'https://example.org'
 * @example parseHttpUrl('https://user:pw@example.org/') // undefined
 */
export function parseHttpUrl(value: string): URL | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
  if (u.username !== '' || u.password !== '') return undefined;
  return u;
}
