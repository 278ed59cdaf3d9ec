import type { IssueCode, Severity } from './codes.js';

/** The default severity, the citation and the message template of one issue code. */
export interface IssueDefinition {
  severity: Severity;
  /** Citation of the rule; documents that cite their own section override it per issue. */
  section: string;
  /** Message template: `{name}` placeholders are filled from the issue's parameters. */
  message: string;
}

const Z = 'Z39.99 §';

/**
 * Every issue code with its severity, section and message: the one message table.
 * @see Z39.99 §7–13 and Appendix A; ResourceSync 1.1 (Z39.99-2017) §7; ResourceSync Archives;
 *   ResourceSync Change Notification and Framework Notification 1.0.1
 */
export const MESSAGES: { readonly [C in IssueCode]: IssueDefinition } = {
  'wrong-namespace': {
    severity: 'error',
    section: `${Z}4`,
    message: "the root element is not in the Sitemap namespace 'http://www.sitemaps.org/schemas/sitemap/0.9'",
  },
  'child-element-mismatch': {
    severity: 'error',
    section: `${Z}7`,
    message: 'the entry element does not match the root: <urlset> has <url> children and <sitemapindex> has <sitemap> children',
  },
  'element-repeated': {
    severity: 'error',
    section: 'Sitemaps protocol',
    message: 'an entry has a second <loc>, <lastmod>, <changefreq> or <priority>; each appears at most once',
  },
  'unexpected-element': {
    severity: 'error',
    section: 'Sitemaps protocol',
    message: 'an element inside <loc>, <lastmod>, <changefreq> or <priority>, which hold text only',
  },
  'unexpected-text': { severity: 'warning', section: `${Z}7`, message: 'text where only elements belong' },
  'unknown-element': {
    severity: 'warning',
    section: `${Z}7`,
    message: 'an element of the Sitemap or ResourceSync namespace that has no place here (kept as an extension)',
  },
  'header-after-entries': {
    severity: 'warning',
    section: `${Z}7`,
    message: 'a top-level <rs:md> or <rs:ln> comes after the first entry; Table 2 puts them before the entries',
  },
  'md-missing': { severity: 'error', section: `${Z}7`, message: 'the mandatory top-level <rs:md> element is missing' },
  'md-repeated': { severity: 'error', section: `${Z}7`, message: 'the <rs:md> element is repeated; it is not repeatable' },
  'capability-missing': {
    severity: 'error',
    section: `${Z}7`,
    message: 'the top-level <rs:md> has no capability attribute; it is mandatory in all ResourceSync documents',
  },
  'capability-unknown': { severity: 'error', section: `${Z}7`, message: "capability '{value}' is not a defined value" },
  'capability-root-mismatch': {
    severity: 'error',
    section: `${Z}6.1`,
    message: "capability '{value}' is not used with the <{root}> root element",
  },
  'capability-index-name': {
    severity: 'error',
    section: `${Z}6.1`,
    message: "capability '{value}' is not defined: an index has the capability of the documents it groups, '{expected}'",
  },
  'capabilitylist-index': {
    severity: 'warning',
    section: `${Z}9`,
    message: 'Sources should not generate Capability List Indexes',
  },
  'at-missing': { severity: 'error', section: `${Z}Appendix A`, message: "a {kind} must have an 'at' attribute on its top-level <rs:md>" },
  'from-missing': { severity: 'error', section: `${Z}Appendix A`, message: "a {kind} must have a 'from' attribute on its top-level <rs:md>" },
  'until-missing': { severity: 'error', section: 'ResourceSync Change Notification §3', message: "a {kind} must have an 'until' attribute on its top-level <rs:md>" },
  'at-forbidden': { severity: 'error', section: `${Z}Appendix A`, message: "the '{attribute}' attribute is not used here in a {kind}" },
  'from-forbidden': { severity: 'error', section: `${Z}Appendix A`, message: "the '{attribute}' attribute is not used here in a {kind}" },
  'completed-before-at': { severity: 'error', section: `${Z}7`, message: "completed '{value}' is before at '{expected}'" },
  'until-before-from': { severity: 'error', section: `${Z}7`, message: "until '{value}' is before from '{expected}'" },
  'completed-without-at': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "'completed' is given without 'at'; it may be added where 'at' is used",
  },
  'until-without-from': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "'until' is given without 'from'; it may be added where 'from' is used",
  },
  'datetime-invalid': { severity: 'error', section: `${Z}7`, message: "{attribute} '{value}' is not a W3C Datetime" },
  'datetime-not-utc': {
    severity: 'warning',
    section: `${Z}7`,
    message: "{attribute} '{value}': a complete date and time in UTC (YYYY-MM-DDThh:mm:ss[.s]Z) is recommended",
  },
  'up-link-missing': {
    severity: 'error',
    section: `${Z}10.1`,
    message: "a {kind} must have an <rs:ln rel=\"up\"> pointing to its {expected}",
  },
  'up-link-repeated': { severity: 'warning', section: `${Z}6.2`, message: "there are {count} <rs:ln rel=\"up\"> links; one is expected" },
  'up-link-unexpected': {
    severity: 'warning',
    section: `${Z}6.2`,
    message: 'a Source Description is the top of the hierarchy; it has no <rs:ln rel="up">',
  },
  'describedby-link-missing': {
    severity: 'warning',
    section: `${Z}8`,
    message: 'a {kind} should have an <rs:ln rel="describedby"> to a document that describes {expected}',
  },
  'ln-rel-missing': { severity: 'error', section: `${Z}7`, message: '<rs:ln> has no rel attribute; it is mandatory' },
  'ln-href-missing': { severity: 'error', section: `${Z}7`, message: '<rs:ln> has no href attribute; it is mandatory' },
  'pri-out-of-range': { severity: 'error', section: `${Z}7`, message: "pri '{value}' is not an integer between 1 and 999999" },
  'rs-attribute-prefixed': {
    severity: 'error',
    section: `${Z}7`,
    message: "attribute '{value}' is in the ResourceSync namespace: ResourceSync attributes must not have a namespace prefix",
  },
  'attribute-not-namespaced': {
    severity: 'error',
    section: `${Z}7`,
    message: "attribute '{value}' is not defined by ResourceSync: additional attributes must use another XML namespace",
  },
  'hash-syntax': { severity: 'error', section: `${Z}7`, message: "hash value '{value}' is not of the form algorithm:hexdigest" },
  'hash-not-hex': { severity: 'error', section: `${Z}7`, message: "hash value '{value}' has a digest that is not hex-encoded" },
  'hash-digest-length': {
    severity: 'error',
    section: `${Z}7`,
    message: "hash value '{value}' has {count} hex digits; {attribute} digests have {expected}",
  },
  'length-invalid': { severity: 'error', section: `${Z}7`, message: "length '{value}' is not a non-negative integer" },
  'changefreq-invalid': {
    severity: 'error',
    section: `${Z}7`,
    message: "changefreq '{value}' is not one of always, hourly, daily, weekly, monthly, yearly, never",
  },
  'priority-invalid': { severity: 'warning', section: 'Sitemaps protocol', message: "priority '{value}' is not a number between 0.0 and 1.0" },
  'loc-missing': { severity: 'error', section: `${Z}7`, message: 'the mandatory <loc> is missing or empty' },
  'loc-not-absolute': {
    severity: 'error',
    section: 'Sitemaps protocol',
    message: "loc '{value}' is not an absolute URI; a URL must begin with the protocol (such as http)",
  },
  'loc-duplicate': {
    severity: 'warning',
    section: `${Z}10.1`,
    message: "loc '{value}' is listed more than once; one <url> per resource is expected",
  },
  'lastmod-missing': { severity: 'error', section: `${Z}12.1`, message: 'a {kind} entry must have a <lastmod> (ResourceSync 1.0)' },
  'lastmod-discouraged': {
    severity: 'warning',
    section: `${Z}8`,
    message: '<lastmod> should be omitted from a {kind} unless it is updated whenever the documents it lists are',
  },
  'lastmod-outside-interval': {
    severity: 'warning',
    section: `${Z}12.1`,
    message: "lastmod '{value}' of a change is outside the document's interval [{from}, {until}]",
  },
  'change-missing': { severity: 'error', section: `${Z}12.1`, message: "a {kind} entry must have an <rs:md> with a 'change' attribute" },
  'change-invalid': { severity: 'error', section: `${Z}7`, message: "change '{value}' is not one of created, updated, deleted" },
  'change-unexpected': {
    severity: 'warning',
    section: `${Z}7`,
    message: "the 'change' attribute is used in Change Lists and Change Dump Manifests, not in a {kind}",
  },
  'datetime-unexpected': { severity: 'warning', section: 'ResourceSync 1.1 §7', message: "the 'datetime' attribute {expected}" },
  'datetime-outside-interval': {
    severity: 'error',
    section: 'ResourceSync 1.1 §7',
    message: "datetime '{value}' is outside the document's interval [{from}, {until}]",
  },
  'changes-out-of-order': {
    severity: 'error',
    section: `${Z}12.1`,
    message: "entries of a {kind} must be in forward chronological order: {attribute} '{value}' is before '{previous}' of the previous entry",
  },
  'packages-out-of-order': {
    severity: 'warning',
    section: `${Z}13.1`,
    message: "entries of a {kind} should be in forward chronological order: {attribute} '{value}' is before '{previous}' of the previous entry",
  },
  'archive-out-of-order': {
    severity: 'error',
    section: 'ResourceSync Archives §5',
    message: "the pointers in a {kind} must be in chronological order: from '{value}' is before '{previous}' of the previous entry",
  },
  'entry-capability-missing': {
    severity: 'error',
    section: `${Z}9`,
    message: "a {kind} entry must have an <rs:md> with a 'capability' attribute",
  },
  'entry-capability-invalid': {
    severity: 'error',
    section: `${Z}8`,
    message: "capability '{value}' of a {kind} entry must be '{expected}'",
  },
  'entry-capability-unknown': {
    severity: 'warning',
    section: `${Z}9`,
    message: "capability '{value}' is not defined by ResourceSync or its Archives",
  },
  'capability-duplicate': {
    severity: 'error',
    section: `${Z}9`,
    message: "capability '{value}' is listed more than once; a Capability List must only contain one entry per capability",
  },
  'entry-from-missing': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "a {kind} entry should have an <rs:md> with a 'from' attribute",
  },
  'path-missing': { severity: 'error', section: `${Z}11.2`, message: "a {kind} entry must have an <rs:md> with a 'path' attribute{expected}" },
  'path-not-absolute': { severity: 'error', section: `${Z}11.2`, message: "path '{value}' must start with a slash (/)" },
  'path-unexpected': {
    severity: 'warning',
    section: `${Z}7`,
    message: "the 'path' attribute is used in Resource Dump Manifests and Change Dump Manifests, not in a {kind}",
  },
  'type-missing': {
    severity: 'warning',
    section: `${Z}13.2`,
    message: "the 'type' attribute is strongly recommended on <rs:md> of a {kind} entry",
  },
  'package-metadata-missing': {
    severity: 'warning',
    section: `${Z}11.1`,
    message: "an <rs:md> with the 'type' and 'length' of the package is recommended in a {kind} entry",
  },
  'framework-change-not-allowed': {
    severity: 'error',
    section: 'ResourceSync Framework Notification §2.1, Table 2',
    message: "change '{value}' is not allowed for capability '{expected}' in a Framework Notification",
  },
  'capability-legacy-name': {
    severity: 'error',
    section: 'ResourceSync Change Notification §3',
    message: "capability '{value}' is the name of ResourceSync 1.0 notifications; 1.0.1 calls it '{expected}'",
  },
  'issues-truncated': { severity: 'warning', section: '-', message: "{count} more '{value}' issues are not listed" },
  'tolerated-out-of-order': {
    severity: 'warning',
    section: `${Z}12.1`,
    message: "tolerated: entries of the {kind} are not in forward chronological order ({count} out of place)",
  },
  'tolerated-datetime-no-zone': {
    severity: 'warning',
    section: `${Z}7`,
    message: "tolerated: {attribute} '{value}' has a time without a time zone; read as UTC",
  },
  'tolerated-hash-encoding': {
    severity: 'warning',
    section: `${Z}7`,
    message: "tolerated: hash value '{value}' is not hex-encoded; kept as written",
  },
  'tolerated-capability-index-name': {
    severity: 'warning',
    section: `${Z}6.1`,
    message: "tolerated: capability '{value}' read as '{expected}'",
  },
  'tolerated-up-link-missing': {
    severity: 'warning',
    section: `${Z}10.1`,
    message: 'tolerated: the {kind} has no <rs:ln rel="up">',
  },
  'tolerated-from-missing': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "tolerated: the {kind} has no 'from' on its top-level <rs:md>; read as starting at its earliest entry",
  },
  'tolerated-at-missing': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "tolerated: the {kind} has no 'at' on its top-level <rs:md>; the time of its snapshot is unknown",
  },
  'tolerated-path-relative': {
    severity: 'warning',
    section: `${Z}11.2`,
    message: "tolerated: path '{value}' does not start with a slash; read as '/{expected}', relative to the package root",
  },
  'tolerated-datetime-space': {
    severity: 'warning',
    section: `${Z}7`,
    message: "tolerated: {attribute} '{value}' has a space between date and time; read as 'T'",
  },
  'tolerated-draft-modified': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "tolerated: the draft-era attribute modified='{value}' read as {attribute}='{value}'",
  },
  'tolerated-draft-modified-ignored': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "tolerated: the draft-era attribute modified='{value}' of the {kind} is ignored (it has no time attribute)",
  },
  'tolerated-completed-before-at': {
    severity: 'warning',
    section: `${Z}7`,
    message: "tolerated: completed '{value}' is before at '{expected}'; 'completed' is ignored",
  },
  'tolerated-at-instead-of-from': {
    severity: 'warning',
    section: `${Z}Appendix A`,
    message: "tolerated: the {kind} gives '{attribute}' instead of 'from'; it is ignored",
  },
  'tolerated-description-entry-capability': {
    severity: 'warning',
    section: `${Z}8`,
    message: "tolerated: capability '{value}' of a Source Description entry; read as 'capabilitylist'",
  },
  'tolerated-md-merged': {
    severity: 'warning',
    section: `${Z}7`,
    message: 'tolerated: a second <rs:md>; its attributes are merged into the first (the first wins where both have one)',
  },
  'tolerated-capability-duplicate': {
    severity: 'warning',
    section: `${Z}9`,
    message: "tolerated: capability '{value}' is listed more than once; every document listed for it is kept",
  },
  'tolerated-lastmod-missing': {
    severity: 'warning',
    section: `${Z}12.1`,
    message: 'tolerated: a deletion in the {kind} has no <lastmod> (ResourceSync 1.0); read as a deletion at an unknown time within the list',
  },
  'tolerated-until-before-from': {
    severity: 'warning',
    section: `${Z}7`,
    message: "tolerated: until '{value}' is before from '{expected}'; 'until' is ignored (an interval open at its end)",
  },
  'tolerated-loc-relative': {
    severity: 'warning',
    section: 'Sitemaps protocol',
    message: "tolerated: loc '{value}' is a relative URI; resolved against the URL of the document that lists it",
  },
  'tolerated-capability-legacy-name': {
    severity: 'warning',
    section: 'ResourceSync Change Notification §3',
    message: "tolerated: capability '{value}' read as '{expected}'",
  },
};

/** Parameters of a message template. */
export type MessageParams = Readonly<Record<string, string | number | undefined>>;

const PLACEHOLDER = /\{(\w+)\}/g;

/**
 * The message of `code` with its placeholders filled.
 * @example formatMessage('length-invalid', { value: '-1' }) === "length '-1' is not a non-negative integer"
 */
export function formatMessage(code: IssueCode, params: MessageParams = {}): string {
  return MESSAGES[code].message.replace(PLACEHOLDER, (_m, name: string) => String(params[name] ?? ''));
}
