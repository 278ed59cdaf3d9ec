/**
 * XML 1.0 (fifth edition)'s character classes as the reader (./xml-reader.ts) uses them: the Name production, the
 * characters outside Char, and those that make a value or text need more than a slice.
 * @see XML 1.0 §2.2 (Char), §2.3 (Name)
 */

/** Characters that make an attribute value need more than a slice. */
export const ATTR_SPECIAL = /[<&\t\n\r]/;
/** Characters that make character data need more than a slice. */
export const TEXT_SPECIAL = /[\]&\r]/;

// XML 1.0 (fifth edition) NameStartChar / NameChar; U+10000–U+EFFFF as surrogate pairs.
const NAME_START_NON_ASCII =
  /[\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD]/;
const NAME_NON_ASCII =
  /[\u00B7\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u037D\u037F-\u1FFF\u200C-\u200D\u203F\u2040\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD]/;
const ASTRAL_NAME_CHAR = '[\\uD800-\\uDB7F][\\uDC00-\\uDFFF]';
/** An XML Name (sticky): a native regular expression is fast in every tier of the JIT. */
export const NAME = new RegExp(
  `(?:[A-Za-z_:]|${NAME_START_NON_ASCII.source}|${ASTRAL_NAME_CHAR})(?:[A-Za-z0-9_:.\\-]|${NAME_NON_ASCII.source}|${ASTRAL_NAME_CHAR})*`,
  'y',
);
/** Characters that may not appear anywhere in an XML 1.0 document (lone surrogates cannot survive UTF-8 decoding). */
// eslint-disable-next-line no-control-regex
export const NOT_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;
