/**
 * Compares two strings in the byte order of their UTF-8 encodings (SQLite's BINARY collation), without
 * encoding them. JavaScript's `<` compares UTF-16 code units, which differs only between surrogate pairs
 * (code points ≥ U+10000) and U+E000–U+FFFF; those are remapped here.
 */
export function compareUtf8(a: string, b: string): number {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x = x < 0xe000 ? x + 0x2000 : x - 0x800;
        y = y < 0xe000 ? y + 0x2000 : y - 0x800;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}
