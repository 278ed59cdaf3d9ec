/**
 * Escaping of text and attribute values for the ResourceSync document writer.
 *
 * Every value goes through one regular-expression test; only values that contain a special or a
 * forbidden character take the slow path. Characters that XML 1.0 does not allow (C0 controls other
 * than tab, newline and carriage return; lone surrogates; U+FFFE and U+FFFF) cannot be written at
 * all, not even as character references, so they make the writer throw `RS_INVALID_ARGUMENT`.
 * @see XML 1.0 §2.2 (Char), §2.4 (character data), §3.3.3 (attribute-value normalization)
 * @see Z39.99 §7 (documents are XML in the Sitemap format)
 */

import { ResourceSyncError } from '../errors.js';

// Characters that need work in text content: markup characters, CR (a parser would turn it into
// a newline, XML 1.0 §2.11), and anything possibly forbidden
// (controls, surrogates: a valid pair is checked on the slow path, U+FFFE/U+FFFF).
// eslint-disable-next-line no-control-regex
const TEXT_SPECIAL = /[&<>\r\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;
// Attribute values also escape the quote, and tab/newline/CR, which a parser would otherwise
// normalize to spaces (XML 1.0 §3.3.3): as character references they survive a round trip.
// eslint-disable-next-line no-control-regex
const ATTRIBUTE_SPECIAL = /[&<>"\t\n\r\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;

/**
 * Escapes character data for element content: `&`, `<` and `>` become entity references.
 * Throws `RS_INVALID_ARGUMENT` on a character that XML 1.0 does not allow.
 * @param name what the value is (e.g. `loc`), used in the error message
 * @example escapeText('a < b & c') // 'a &lt; b &amp; c'
 */
export function escapeText(value: string, name = 'value'): string {
  if (!TEXT_SPECIAL.test(value)) return value;
  return escapeSlow(value, false, name);
}

/**
 * Escapes an attribute value written between double quotes: `&`, `<`, `>`, `"` become entity
 * references and tab, newline and carriage return become `&#9;`, `&#10;`, `&#13;`.
 * Throws `RS_INVALID_ARGUMENT` on a character that XML 1.0 does not allow.
 * @param name the attribute's name, used in the error message
 * @example escapeAttribute('say "hi"\n') // 'say &quot;hi&quot;&#10;'
 */
export function escapeAttribute(value: string, name = 'value'): string {
  if (!ATTRIBUTE_SPECIAL.test(value)) return value;
  return escapeSlow(value, true, name);
}

/** True when every character of `value` is allowed in an XML 1.0 document. @see XML 1.0 §2.2 */
export function isXmlChars(value: string): boolean {
  if (!TEXT_SPECIAL.test(value)) return true;
  return firstInvalid(value) < 0;
}

function escapeSlow(value: string, attribute: boolean, name: string): string {
  let out = '';
  let last = 0;
  const n = value.length;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    let rep: string;
    if (c === 0x26) rep = '&amp;';
    else if (c === 0x3c) rep = '&lt;';
    else if (c === 0x3e) rep = '&gt;';
    else if (c === 0x22 && attribute) rep = '&quot;';
    else if (c === 0x09) {
      if (!attribute) continue;
      rep = '&#9;';
    } else if (c === 0x0a) {
      if (!attribute) continue;
      rep = '&#10;';
    } else if (c === 0x0d) {
      // A literal CR in content would be normalized to LF by a parser (XML 1.0 §2.11).
      rep = '&#13;';
    } else if (c < 0x20 || c === 0xfffe || c === 0xffff) {
      throw invalidChar(value, i, c, name);
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < n ? value.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) throw invalidChar(value, i, c, name);
      i++; // a valid pair: keep both halves
      continue;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      throw invalidChar(value, i, c, name);
    } else {
      continue;
    }
    out += value.slice(last, i) + rep;
    last = i + 1;
  }
  return last === 0 ? value : out + value.slice(last);
}

function firstInvalid(value: string): number {
  const n = value.length;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20) {
      if (c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
    } else if (c === 0xfffe || c === 0xffff) {
      return i;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < n ? value.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) return i;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return i;
    }
  }
  return -1;
}

function invalidChar(value: string, index: number, code: number, name: string): ResourceSyncError {
  const cp = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return new ResourceSyncError(
    'RS_INVALID_ARGUMENT',
    `${name} ${JSON.stringify(shown)} contains ${cp} at index ${index}, a character XML 1.0 does not allow.`,
    { data: { name, value, index, codePoint: cp } },
  );
}

// XML 1.0 Name restricted to what namespaces allow in a prefix or local name (NCName), ASCII
// letters plus the non-ASCII ranges of XML 1.0 §2.3 (approximated by "any character ≥ U+00C0").
const NCNAME = /^[A-Za-z_\u00C0-\uFFFD][A-Za-z0-9._\-\u00B7\u00C0-\uFFFD]*$/;

/** True when `name` can be written as a namespace prefix or local name (an NCName). @see Namespaces in XML 1.0 §3 */
export function isNcName(name: string): boolean {
  return NCNAME.test(name);
}
