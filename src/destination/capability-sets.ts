/**
 * The capability sets behind a starting URL: what each Capability List offers a Destination (§9), read from
 * discovery. Shared by sync and audit.
 */
import { ResourceSyncError } from '../core/errors.js';
import type { DocumentContext } from './documents.js';
import { discover, type DiscoveredCapabilityList } from './discover.js';
import { note, type DestinationNote } from './notes.js';

/** The documents of one capability set, as found from the starting URL. */
export interface CapabilitySet {
  /** Identifies the set in the state (the Capability List URL, or the list given directly). */
  key: string;
  resourceList?: string;
  changeList?: string;
  resourceDump?: string;
  changeDump?: string;
  /** The Change List Archive, for a Destination whose cursor is older than the Change Lists on offer. */
  changeListArchive?: string;
  /** The Change Dump Archive, likewise for Change Dumps. */
  changeDumpArchive?: string;
  /** Every capability the Capability List advertises. */
  offered: string[];
}

/**
 * Finds the capability sets behind a starting URL with `discover()` (well-known URI, Capability Lists, lists
 * given directly, `up`/`index` links, robots.txt, Link headers, HTML links), optionally keeping only one
 * Capability List.
 * @see Z39.99 §6.2, §6.3
 */
export async function resolveSets(ctx: DocumentContext, url: string, only?: string): Promise<{ sets: CapabilitySet[]; warnings: DestinationNote[] }> {
  const d = await discover(url, { http: ctx.http, authority: ctx.authority, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  const warnings = [...d.warnings];
  let lists = d.capabilityLists;
  if (only !== undefined) {
    lists = lists.filter((c) => c.url === only);
    if (lists.length === 0) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Source '${url}' has no Capability List '${only}' (found: ${d.capabilityLists.map((c) => `'${c.url}'`).join(', ') || 'none'}).`, {
        data: { url, only },
      });
    }
  }
  if (lists.length === 0) {
    throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Source '${url}' offers no Capability List, Resource List or Change List.`, { data: { url, notes: d.notes } });
  }
  const sets = lists.map((c) => {
    const set: CapabilitySet = { key: c.url, offered: Object.keys(c.capabilities) };
    const first = (cap: keyof DiscoveredCapabilityList['capabilities']): string | undefined => c.capabilities[cap]?.[0];
    const rl = first('resourcelist');
    const cl = first('changelist');
    const rd = first('resourcedump');
    const cd = first('changedump');
    if (rl !== undefined) set.resourceList = rl;
    if (cl !== undefined) set.changeList = cl;
    if (rd !== undefined) set.resourceDump = rd;
    if (cd !== undefined) set.changeDump = cd;
    const cla = first('changelist-archive');
    if (cla !== undefined) set.changeListArchive = cla;
    const cda = first('changedump-archive');
    if (cda !== undefined) set.changeDumpArchive = cda;
    for (const cap of ['resourcelist', 'changelist', 'resourcedump', 'changedump'] as const) {
      if ((c.capabilities[cap]?.length ?? 0) > 1) warnings.push(note('capability-list-several', { url: c.url, capability: cap }));
    }
    return set;
  });
  return { sets, warnings };
}
