/**
 * HTTP `Link` header parsing (RFC 8288 §3), pure. Used for discovery: `Link: <…>; rel="resourcesync"`.
 * @see Z39.99 §6.3.3, Example 10
 */

/** One link of a Link header. */
export interface WebLink {
  /** The target as written between `<` and `>` (resolve it against the response URL). */
  target: string;
  /** Relation types, lower-cased (registered types are case-insensitive; RFC 8288 §2.1.1). */
  rel: string[];
  /** All parameters, lower-case names; the first occurrence wins (RFC 8288 §3). `title*` style values are decoded. */
  params: Record<string, string>;
}

const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;

/**
 * Parses one or more `Link` header values (several headers may be joined with `,`). Malformed
 * links are skipped; parsing resumes at the next top-level comma.
 * @example parseLinkHeader('<http://e.com/cl.xml>; rel="resourcesync"') // [{ target: 'http://e.com/cl.xml', rel: ['resourcesync'], … }]
 * @see RFC 8288 §3
 */
export function parseLinkHeader(value: string): WebLink[] {
  const out: WebLink[] = [];
  const s = value;
  let i = 0;
  const n = s.length;
  const skipWs = () => {
    while (i < n && (s[i] === ' ' || s[i] === '\t' || s[i] === '\r' || s[i] === '\n')) i++;
  };
  /** Skips to just past the next top-level comma (outside quotes and angle brackets). */
  const skipToComma = () => {
    let inQuote = false;
    while (i < n) {
      const c = s[i]!;
      if (inQuote) {
        if (c === '\\') i++;
        else if (c === '"') inQuote = false;
      } else if (c === '"') inQuote = true;
      else if (c === ',') {
        i++;
        return;
      }
      i++;
    }
  };
  while (i < n) {
    skipWs();
    if (s[i] === ',') {
      i++;
      continue;
    }
    if (i >= n) break;
    if (s[i] !== '<') {
      skipToComma();
      continue;
    }
    const close = s.indexOf('>', i + 1);
    if (close < 0) break;
    const target = s.slice(i + 1, close).trim();
    i = close + 1;
    const params: Record<string, string> = {};
    let ok = true;
    for (;;) {
      skipWs();
      if (i >= n || s[i] === ',') break;
      if (s[i] !== ';') {
        ok = false;
        break;
      }
      i++;
      skipWs();
      let name = '';
      while (i < n && TOKEN.test(s[i]!)) name += s[i++];
      if (name === '') {
        ok = false;
        break;
      }
      name = name.toLowerCase();
      skipWs();
      let val = '';
      if (s[i] === '=') {
        i++;
        skipWs();
        if (s[i] === '"') {
          i++;
          let closed = false;
          while (i < n) {
            const c = s[i++]!;
            if (c === '\\' && i < n) val += s[i++];
            else if (c === '"') {
              closed = true;
              break;
            } else val += c;
          }
          if (!closed) {
            ok = false;
            break;
          }
        } else {
          // A token; tolerate other visible characters (e.g. `type=application/xml`) up to `;`, `,` or space.
          while (i < n && !/[;,\s"]/.test(s[i]!)) val += s[i++];
        }
      }
      if (name.endsWith('*')) {
        const decoded = decodeExtValue(val);
        if (decoded !== undefined) {
          name = name.slice(0, -1);
          val = decoded;
        }
      }
      if (!Object.hasOwn(params, name)) params[name] = val;
    }
    if (ok) {
      const rel = (params.rel ?? '')
        .split(/\s+/)
        .filter((r) => r !== '')
        .map((r) => r.toLowerCase());
      out.push({ target, rel, params });
    } else {
      skipToComma();
    }
  }
  return out;
}

/** RFC 8187 ext-value: `charset'lang'pct-encoded`. */
function decodeExtValue(v: string): string | undefined {
  const m = /^([^']*)'[^']*'(.*)$/.exec(v);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[2]!);
  } catch {
    return undefined;
  }
}
