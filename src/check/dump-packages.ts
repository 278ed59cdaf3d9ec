/**
 * The dump packages of `check`: each ZIP package a Resource Dump or Change Dump lists is downloaded (bounded by
 * `maxPackageBytes`), checked against the dump's length and hashes, and opened; its manifest is validated,
 * its bitstreams are matched with the manifest, and a Resource Dump Manifest is compared with the Resource
 * List of the same time.
 * @see Z39.99 §11, §13
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHashes, parseLength, isKnownHashAlgorithm } from '../core/hash.js';
import type { Entry } from '../core/model/types.js';
import { createValidator } from '../core/validate/index.js';
import { readDocument } from '../core/xml/read-document.js';
import { kindOf } from '../destination/documents.js';
import type { HttpResponse } from '../client/http.js';
import { downloadToFile } from '../client/download-to-file.js';
import { hashMismatches } from '../node/body-digests.js';
import { DEFAULTS, ms, norm, reason, type CheckContext, type PackageJob } from './context.js';
import { expectations } from './crawl.js';
import { readPackage, type PackageContents } from './package.js';
import type { CheckedDocument } from './report.js';

/** Downloads each package, checks it against the dump's metadata, opens its manifest. @see Z39.99 §11 */
export async function checkPackages(c: CheckContext): Promise<void> {
  if (c.packages.length === 0) return;
  const dir = await mkdtemp(join(c.o.tmpDir ?? tmpdir(), 'rs-check-'));
  try {
    for (const p of c.packages) {
      if (c.documents.length >= c.maxDocuments) {
        c.truncated++;
        continue;
      }
      await checkPackage(c, p, dir);
      c.progress('packages');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function checkPackage(c: CheckContext, p: PackageJob, dir: string): Promise<void> {
  const doc: CheckedDocument = {
    url: p.url,
    kind: 'package',
    parent: p.dump,
    entries: 0,
    bytes: 0,
    errors: 0,
    warnings: 0,
  };
  c.documents.push(doc);
  const file = join(dir, `package-${c.documents.length}.zip`);
  if (!(await downloadPackage(c, p, doc, file))) return;
  let contents: PackageContents;
  try {
    contents = await readPackage(file);
  } catch (error) {
    c.issue('package-unreadable', p.url, { reason: reason(error) });
    return;
  }
  doc.entries = contents.files.size;
  if (contents.manifest === undefined) {
    c.issue('manifest-missing', p.url, {});
    return;
  }
  await checkManifest(c, p, contents.files, contents.manifest);
}

/**
 * Downloads a package to `file` (bounded by `maxPackageBytes`) and compares it with the dump's length and hashes;
 * false when it could not be read (an issue says why).
 */
async function downloadPackage(c: CheckContext, p: PackageJob, doc: CheckedDocument, file: string): Promise<boolean> {
  let res: HttpResponse;
  try {
    res = await c.request(p.url);
  } catch (error) {
    if (c.o.signal?.aborted === true) throw error;
    c.issue('package-unreachable', p.url, { from: p.dump, status: reason(error) });
    return false;
  }
  if (res.status !== 200) {
    await res.discard();
    doc.status = res.status;
    c.issue('package-unreachable', p.url, { from: p.dump, status: `HTTP ${res.status}` });
    return false;
  }
  const declared = parseHashes(p.md?.hash).filter((h) => isKnownHashAlgorithm(h.algorithm));
  let digests: Record<string, string>;
  try {
    ({ digests } = await downloadToFile(res, file, {
      url: p.url,
      maxBytes: c.o.maxPackageBytes ?? DEFAULTS.maxPackageBytes,
      hashes: declared,
      verify: false,
      onBytes: (n) => (doc.bytes = n),
    }));
  } catch (error) {
    if (c.o.signal?.aborted === true) throw error;
    c.issue('package-unreadable', p.url, { reason: reason(error) });
    return false;
  }
  const length = parseLength(p.md?.length);
  if (length !== undefined && length !== doc.bytes)
    c.issue('package-length-mismatch', p.url, { from: p.dump, expected: length, actual: doc.bytes });
  for (const { algorithm, expected, actual } of hashMismatches(declared, digests))
    c.issue('package-hash-mismatch', p.url, { from: p.dump, algorithm, expected, actual });
  return true;
}

/**
 * Validates a package's manifest, matches its entries with the package's files, and compares a Resource Dump
 * Manifest with the Resource List of the same time. @see Z39.99 §11.2, §13.2
 */
async function checkManifest(c: CheckContext, p: PackageJob, files: Map<string, number>, manifest: Buffer): Promise<void> {
  const manifestUrl = `${p.url}#manifest.xml`;
  const manifestDoc: CheckedDocument = {
    url: manifestUrl,
    kind: null,
    parent: p.url,
    entries: 0,
    bytes: manifest.length,
    errors: 0,
    warnings: 0,
  };
  c.documents.push(manifestDoc);
  try {
    const reader = await readDocument(manifest);
    const kind = kindOf(reader.header);
    manifestDoc.kind = kind?.id ?? null;
    if (reader.header.md?.capability !== undefined) manifestDoc.capability = reader.header.md.capability;
    const mdAt = reader.header.md?.at;
    if (mdAt !== undefined) manifestDoc.at = mdAt;
    if (reader.header.md?.from !== undefined) manifestDoc.from = reader.header.md.from;
    if (reader.header.md?.until !== undefined) manifestDoc.until = reader.header.md.until;
    expectations(
      c,
      { url: manifestUrl, parent: p.dump, via: 'capabilitylist', capability: p.manifestCapability },
      reader.header,
      kind?.capability ?? reader.header.md?.capability,
      kind?.id,
    );
    const validator = createValidator(reader.header, { spec: '1.1', mode: 'strict' });
    // what the manifest says of each resource, for the Resource List of the same time (bounded by the manifest's size)
    const claims = new Map<string, Claim>();
    for await (const e of reader.entries) {
      validator.entry(e);
      manifestDoc.entries++;
      if (e.md?.change === 'deleted') continue;
      checkBitstream(c, manifestUrl, files, e);
      if (p.manifestCapability === 'resourcedump-manifest')
        claims.set(norm(e.loc, p.url), {
          ...(e.md?.length === undefined ? {} : { length: e.md.length }),
          ...(e.md?.hash === undefined ? {} : { hash: e.md.hash }),
        });
    }
    c.addValidationIssues(manifestUrl, validator.end(reader.notes));
    const lists = mdAt === undefined ? undefined : c.listsAt.get(String(ms(mdAt)));
    if (lists !== undefined && claims.size > 0) await compareWithLists(c, manifestUrl, claims, lists);
  } catch (error) {
    if (c.o.signal?.aborted === true) throw error;
    c.issue('document-unreadable', manifestUrl, { reason: reason(error) });
  }
}

/** What a Resource Dump Manifest says of one resource. */
interface Claim {
  length?: string;
  hash?: string;
}

/** The bitstream a manifest entry's `path` names is in the package, of the entry's `length`. @see Z39.99 §11.2 */
function checkBitstream(c: CheckContext, manifestUrl: string, files: Map<string, number>, e: Entry): void {
  const path = e.md?.path;
  if (path === undefined) return;
  const size = files.get(path.replace(/^\/+/, ''));
  if (size === undefined) c.issue('manifest-bitstream-missing', manifestUrl, { loc: e.loc, path }, e.line);
  else {
    const expected = parseLength(e.md?.length);
    if (expected !== undefined && expected !== size)
      c.issue('manifest-bitstream-length', manifestUrl, { path, expected, actual: size }, e.line);
  }
}

/** A Resource Dump's manifest and the Resource List of the same `at` describe the same resources alike. @see Z39.99 §11.2 */
async function compareWithLists(
  c: CheckContext,
  manifest: string,
  claims: Map<string, Claim>,
  lists: string[],
): Promise<void> {
  for (const list of lists) {
    let res: HttpResponse;
    try {
      res = await c.request(list);
    } catch {
      continue;
    }
    if (res.status !== 200) {
      await res.discard();
      continue;
    }
    const reader = await readDocument(res.body);
    for await (const e of reader.entries) {
      const loc = norm(e.loc, list);
      const claim = claims.get(loc);
      if (claim === undefined) continue;
      claims.delete(loc);
      const sameLength =
        claim.length === undefined ||
        e.md?.length === undefined ||
        parseLength(claim.length) === parseLength(e.md.length);
      const listHashes = new Map(parseHashes(e.md?.hash).map((h) => [h.algorithm, h.digest]));
      const sameHash = parseHashes(claim.hash).every(
        (h) => listHashes.get(h.algorithm) === undefined || listHashes.get(h.algorithm) === h.digest,
      );
      if (!sameLength || !sameHash) {
        c.issue('manifest-resourcelist-disagrees', manifest, {
          loc,
          manifest: `length ${claim.length ?? '–'}, hash ${claim.hash ?? '–'}`,
          list,
          list_value: `length ${e.md?.length ?? '–'}, hash ${e.md?.hash ?? '–'}`,
        });
      }
    }
  }
  for (const loc of claims.keys()) {
    c.issue('manifest-resourcelist-disagrees', manifest, {
      loc,
      manifest: 'it is in the dump',
      list: lists.join("', '"),
      list_value: 'it is not listed',
    });
  }
}
