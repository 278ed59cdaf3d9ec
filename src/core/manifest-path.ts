/**
 * How a dump manifest's `path` is read. Z39.99 §11.2 and §13.2 give each bitstream "the relative file
 * system path where the bitstream would reside" in the package, written with a leading slash
 * (`/resources/res1`). Real producers also write it without the slash (`resources/res1`, what
 * `resync-build` writes) or as `./resources/res1`; read leniently, both are relative to the package root.
 * This module only reads the path: the Destination's own checks (no `..`, no drive letters, no
 * control characters, confinement) still apply to the result.
 * @see Z39.99 §11.2, §13.2
 */

/** A manifest `path` read as a name inside the package. */
export interface ManifestPath {
  /** The path inside the package, without leading slash: `resources/res1`. */
  name: string;
  /** True when the path lacked the leading slash the standard requires (a lenient reading). */
  relative: boolean;
}

/**
 * Reads a manifest `path`: `/a/b` and (leniently) `a/b` and `./a/b` name `a/b` in the package.
 * Returns undefined when nothing is left or a `..` segment would leave the package root.
 * @example readManifestPath('./sub/b.txt') // { name: 'sub/b.txt', relative: true }
 * @example readManifestPath('/sub/b.txt') // { name: 'sub/b.txt', relative: false }
 */
export function readManifestPath(path: string): ManifestPath | undefined {
  const relative = path.charCodeAt(0) !== 47; // '/'
  let start = 0;
  const n = path.length;
  // leading slashes, and './' segments when the path is relative
  for (let guard = 0; guard < n && start < n; guard++) {
    if (path.charCodeAt(start) === 47) start++;
    else if (relative && path.startsWith('./', start)) start += 2;
    else break;
  }
  const name = path.slice(start);
  if (name === '' || name === '.' || name === '..' || name.startsWith('../') || name.includes('/../') || name.endsWith('/..')) {
    return undefined;
  }
  return { name, relative };
}
