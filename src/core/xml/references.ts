/**
 * Character and entity references (XML 1.0 §4.1). Only the five predefined entities exist: there is
 * no DTD, so any other entity reference is an error, and nothing is ever expanded recursively.
 */

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const REF = /&(?:#x([0-9a-fA-F]+)|#([0-9]+)|([A-Za-z_:][A-Za-z0-9_.:-]*))?(;?)/g;

function isXmlChar(cp: number): boolean {
  return (
    cp === 0x9 ||
    cp === 0xa ||
    cp === 0xd ||
    (cp >= 0x20 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd) ||
    (cp >= 0x10000 && cp <= 0x10ffff)
  );
}

/** Decodes the references in `raw`, or returns the reason it is not well-formed. */
export function decodeReferences(raw: string): string | { error: string } {
  let error: string | undefined;
  const out = raw.replace(REF, (whole, hex: string | undefined, dec: string | undefined, name: string | undefined, semi: string) => {
    if (error !== undefined) return '';
    if (semi !== ';' || (hex === undefined && dec === undefined && name === undefined)) {
      error = `'&' must start a reference ending in ';' (found '${whole.slice(0, 12)}')`;
      return '';
    }
    if (name !== undefined) {
      const v = PREDEFINED[name];
      if (v === undefined) {
        error = `undeclared entity '&${name};' (entities other than the five predefined ones are not allowed)`;
        return '';
      }
      return v;
    }
    const digits = hex ?? dec!;
    const cp = digits.length > 7 ? -1 : parseInt(digits, hex !== undefined ? 16 : 10);
    if (!isXmlChar(cp)) {
      error = `character reference '${whole}' is not an XML character`;
      return '';
    }
    return String.fromCodePoint(cp);
  });
  return error === undefined ? out : { error };
}
