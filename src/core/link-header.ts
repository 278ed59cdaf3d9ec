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
  const scanner = new LinkScanner(value);
  while (!scanner.atEnd) {
    scanner.skipWhitespace();
    if (scanner.peek() === ',') {
      scanner.position++;
      continue;
    }
    if (scanner.atEnd) break;
    if (scanner.peek() !== '<') {
      scanner.skipToComma();
      continue;
    }
    const close = value.indexOf('>', scanner.position + 1);
    if (close < 0) break;
    const target = value.slice(scanner.position + 1, close).trim();
    scanner.position = close + 1;
    const params = scanner.readParams();
    if (params !== undefined) {
      const rel = (params.rel ?? '')
        .split(/\s+/)
        .filter((r) => r !== '')
        .map((r) => r.toLowerCase());
      out.push({ target, rel, params });
    } else {
      scanner.skipToComma();
    }
  }
  return out;
}

/** A position in a Link header value, and the steps of reading it. */
class LinkScanner {
  position = 0;
  readonly #text: string;
  readonly #length: number;

  constructor(text: string) {
    this.#text = text;
    this.#length = text.length;
  }

  get atEnd(): boolean {
    return this.position >= this.#length;
  }

  /** The character at the position (undefined at the end). */
  peek(): string | undefined {
    return this.#text[this.position];
  }

  skipWhitespace(): void {
    const s = this.#text;
    while (this.position < this.#length && (s[this.position] === ' ' || s[this.position] === '\t' || s[this.position] === '\r' || s[this.position] === '\n')) this.position++;
  }

  /** Skips to just past the next top-level comma (outside quotes and angle brackets). */
  skipToComma(): void {
    const s = this.#text;
    let inQuote = false;
    while (this.position < this.#length) {
      const c = s[this.position]!;
      if (inQuote) {
        if (c === '\\') this.position++;
        else if (c === '"') inQuote = false;
      } else if (c === '"') inQuote = true;
      else if (c === ',') {
        this.position++;
        return;
      }
      this.position++;
    }
  }

  /** The `; name=value` parameters up to the next `,` or the end; undefined when they are malformed. */
  readParams(): Record<string, string> | undefined {
    const params: Record<string, string> = {};
    for (;;) {
      this.skipWhitespace();
      if (this.atEnd || this.peek() === ',') return params;
      if (this.peek() !== ';') return undefined;
      this.position++;
      const param = this.#readParam();
      if (param === undefined) return undefined;
      let [name, val] = param;
      if (name.endsWith('*')) {
        const decoded = decodeExtValue(val);
        if (decoded !== undefined) {
          name = name.slice(0, -1);
          val = decoded;
        }
      }
      if (!Object.hasOwn(params, name)) params[name] = val;
    }
  }

  /** One parameter after its `;`: the lower-cased name and the value (empty when there is none). */
  #readParam(): [string, string] | undefined {
    const s = this.#text;
    this.skipWhitespace();
    let name = '';
    while (this.position < this.#length && TOKEN.test(s[this.position]!)) name += s[this.position++];
    if (name === '') return undefined;
    name = name.toLowerCase();
    this.skipWhitespace();
    let val = '';
    if (s[this.position] === '=') {
      this.position++;
      this.skipWhitespace();
      if (s[this.position] === '"') {
        this.position++;
        const quoted = this.#readQuoted();
        if (quoted === undefined) return undefined;
        val = quoted;
      } else {
        // A token; tolerate other visible characters (e.g. `type=application/xml`) up to `;`, `,` or space.
        while (this.position < this.#length && !/[;,\s"]/.test(s[this.position]!)) val += s[this.position++];
      }
    }
    return [name, val];
  }

  /** A quoted string after its opening `"`, unescaped; undefined when it is not closed. */
  #readQuoted(): string | undefined {
    const s = this.#text;
    let val = '';
    while (this.position < this.#length) {
      const c = s[this.position++]!;
      if (c === '\\' && this.position < this.#length) val += s[this.position++];
      else if (c === '"') return val;
      else val += c;
    }
    return undefined;
  }
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
