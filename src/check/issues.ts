/**
 * The issues `check` reports beyond those of the per-document validator: the rules that span documents,
 * the ZIP packages of dumps, discovery, and the resources sampled. One table gives each code its severity,
 * the section it enforces and its message template (validator issues keep their own codes and sections).
 * @see Z39.99 §6.3 (discovery), §9 (Capability List), §10.2 and §12.2 (indexes), §11 (Resource Dump),
 *   ResourceSync Archives §3–6
 */
import type { Severity } from '../core/validate/index.js';

const Z = 'Z39.99 §';

/** Codes of the cross-document, package, discovery and resource rules. */
export const CHECK_CODES = [
  'document-unreachable',
  'document-unreadable',
  'document-too-slow',
  'capability-mismatch',
  'up-link-elsewhere',
  'index-link-missing',
  'index-link-elsewhere',
  'changelists-overlap',
  'changelists-gap',
  'changelist-open-not-last',
  'changelist-interval-disagrees',
  'archive-capability-mismatch',
  'listed-kind-mismatch',
  'index-cycle',
  'package-unreachable',
  'package-length-mismatch',
  'package-hash-mismatch',
  'package-unreadable',
  'manifest-missing',
  'manifest-bitstream-missing',
  'manifest-bitstream-length',
  'manifest-resourcelist-disagrees',
  'well-known-missing',
  'well-known-not-description',
  'robots-sitemap-unknown',
  'html-link-elsewhere',
  'resource-link-elsewhere',
  'resource-unreachable',
  'resource-length-mismatch',
  'resource-hash-mismatch',
  'resource-changed-since-list',
  'resource-lastmod-mismatch',
  'channel-hub-missing',
  'channel-discovery-missing',
  'crawl-truncated',
] as const;
export type CheckCode = (typeof CHECK_CODES)[number];

/** Severity, citation and message template (`{name}` placeholders) of one check code. */
export interface CheckIssueDefinition {
  severity: Severity;
  section: string;
  message: string;
}

/** Every check code with its severity, section and message. */
export const CHECK_MESSAGES: { readonly [C in CheckCode]: CheckIssueDefinition } = {
  'document-unreachable': {
    severity: 'error',
    section: `${Z}6.1`,
    message: "the document linked from '{from}' answered {status}",
  },
  'document-unreadable': {
    severity: 'error',
    section: `${Z}7`,
    message: 'the document cannot be read as ResourceSync: {reason}',
  },
  'document-too-slow': {
    severity: 'error',
    section: 'resourcesync check',
    message: "the document linked from '{from}' did not arrive whole within {deadline} ms ({bytes} bytes received)",
  },
  'capability-mismatch': {
    severity: 'error',
    section: `${Z}9`,
    message: "'{from}' lists it as '{expected}' but its capability is '{actual}'",
  },
  'up-link-elsewhere': {
    severity: 'error',
    section: `${Z}6.2`,
    message: "the 'up' link points to '{actual}', not to '{expected}' that lists it",
  },
  'index-link-missing': {
    severity: 'warning',
    section: `${Z}10.2`,
    message: "the document is listed in the index '{expected}' but has no 'index' link back to it",
  },
  'index-link-elsewhere': {
    severity: 'error',
    section: `${Z}6.2`,
    message: "the 'index' link points to '{actual}', which does not list it (the index '{expected}' does)",
  },
  'changelists-overlap': {
    severity: 'error',
    section: `${Z}12.2`,
    message: "Change List '{loc}' starts at {from}, before the previous one ends ({until}): their intervals overlap",
  },
  'changelists-gap': {
    severity: 'error',
    section: `${Z}12.2`,
    message:
      "Change List '{loc}' starts at {from}, after the previous one ends ({until}): changes in between are not covered",
  },
  'changelist-open-not-last': {
    severity: 'error',
    section: `${Z}12.2`,
    message: "Change List '{loc}' is open (no until) but is not the last one of the index",
  },
  'changelist-interval-disagrees': {
    severity: 'error',
    section: `${Z}12.2`,
    message: "the index '{from}' gives the interval {expected}, the Change List itself {actual}",
  },
  'archive-capability-mismatch': {
    severity: 'error',
    section: 'ResourceSync Archives §3–6',
    message: "the archive '{from}' lists it, so its capability must be '{expected}', not '{actual}'",
  },
  'listed-kind-mismatch': {
    severity: 'error',
    section: `${Z}6.2, ResourceSync Archives §3–6`,
    message: "'{from}' lists it as a {expected}, but it is a {actual}",
  },
  'index-cycle': {
    severity: 'error',
    section: `${Z}6.2`,
    message:
      "the index '{from}' lists '{loc}', which is the index itself or one that leads to it: the indexes form a cycle",
  },
  'package-unreachable': {
    severity: 'error',
    section: `${Z}11.1`,
    message: "the package listed in '{from}' answered {status}",
  },
  'package-length-mismatch': {
    severity: 'error',
    section: `${Z}11.1`,
    message: "the package has {actual} bytes, the dump '{from}' says {expected}",
  },
  'package-hash-mismatch': {
    severity: 'error',
    section: `${Z}11.1`,
    message: "the package's {algorithm} is '{actual}', the dump '{from}' says '{expected}'",
  },
  'package-unreadable': {
    severity: 'error',
    section: `${Z}11.1`,
    message: 'the package is not a readable ZIP file: {reason}',
  },
  'manifest-missing': { severity: 'error', section: `${Z}11.2`, message: "the package has no 'manifest.xml'" },
  'manifest-bitstream-missing': {
    severity: 'error',
    section: `${Z}11.2`,
    message: "the manifest entry '{loc}' has path '{path}', which is not in the package",
  },
  'manifest-bitstream-length': {
    severity: 'error',
    section: `${Z}11.2`,
    message: "the manifest gives '{path}' {expected} bytes; the package holds {actual}",
  },
  'manifest-resourcelist-disagrees': {
    severity: 'error',
    section: `${Z}11.2`,
    message: "'{loc}': the manifest says {manifest}, the Resource List '{list}' of the same time says {list_value}",
  },
  'well-known-missing': {
    severity: 'warning',
    section: `${Z}6.3.2`,
    message: "the well-known URI '{url}' answered {status}: the Source Description cannot be found there",
  },
  'well-known-not-description': {
    severity: 'error',
    section: `${Z}6.3.2`,
    message: "the well-known URI '{url}' does not hold a Source Description (capability '{actual}')",
  },
  'robots-sitemap-unknown': {
    severity: 'warning',
    section: `${Z}6.3.4`,
    message: "robots.txt names '{target}', which is not among the documents reached from the Source Description",
  },
  'html-link-elsewhere': {
    severity: 'warning',
    section: `${Z}6.3.3`,
    message:
      'the page links with rel="resourcesync" to \'{target}\', which is not a Capability List or Source Description of this Source',
  },
  'resource-link-elsewhere': {
    severity: 'warning',
    section: `${Z}6.3.3`,
    message:
      "the resource's Link rel=\"resourcesync\" points to '{target}', not to the Capability List of a set that lists it",
  },
  'resource-unreachable': {
    severity: 'error',
    section: `${Z}10.1`,
    message: "the resource listed in '{list}' answered {status}",
  },
  'resource-length-mismatch': {
    severity: 'error',
    section: `${Z}10.1`,
    message: "the resource has {actual} bytes, '{list}' says {expected}",
  },
  'resource-hash-mismatch': {
    severity: 'error',
    section: `${Z}10.1`,
    message: "the resource's {algorithm} is '{actual}', '{list}' says '{expected}'",
  },
  'resource-changed-since-list': {
    severity: 'warning',
    section: `${Z}10.1`,
    message:
      "the resource differs from '{list}' ({what}) but was modified after the list's time ({lastModified} > {at})",
  },
  'resource-lastmod-mismatch': {
    severity: 'warning',
    section: `${Z}7`,
    message: "the resource's Last-Modified is {actual}, '{list}' gives lastmod {expected}",
  },
  'channel-hub-missing': {
    severity: 'error',
    section: 'ResourceSync Change Notification §5',
    message: 'the notification channel \'{loc}\' is advertised without an <rs:ln rel="hub"> giving its WebSub hub',
  },
  'channel-discovery-missing': {
    severity: 'warning',
    section: 'WebSub §4',
    message: 'the topic URL of the notification channel {problem}, so WebSub discovery from it fails',
  },
  'crawl-truncated': {
    severity: 'warning',
    section: 'resourcesync check',
    message: '{what} were left unchecked after the limit of {limit}',
  },
};

/** The message of a check code with its parameters filled in. */
export function checkMessage(code: CheckCode, params: Record<string, string | number | undefined>): string {
  return CHECK_MESSAGES[code].message.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ''));
}
