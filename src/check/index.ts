/**
 * Judging and exploring a live Source: `check` crawls it from any URL and reports issues (per document,
 * across documents, packages, discovery, sampled resources); `explore` returns its document tree.
 * @example
 * import { check } from 'resourcesync/check';
 * const report = await check({ url, http, authority, sample: 100 });
 * @see Z39.99 §6–13
 */
export {
  check,
  type CheckOptions,
  type CheckReport,
  type CheckIssue,
  type CheckedDocument,
  type CheckProgress,
} from './check.js';
export { explore, documentTree, type ExploreOptions, type ExploreResult, type TreeNode } from './explore.js';
export { renderCheckHtml, escapeHtml } from './html.js';
export { CHECK_CODES, CHECK_MESSAGES, checkMessage, type CheckCode, type CheckIssueDefinition } from './issues.js';
