/**
 * Validation of ResourceSync documents: rules → issues, one message table, strict and lenient modes.
 * @see Z39.99 §7–13, Appendix A
 */
export { ISSUE_CODES, hasErrors, type IssueCode, type Severity, type ValidationIssue, type ValidateOptions } from './codes.js';
export { MESSAGES, formatMessage, type IssueDefinition, type MessageParams } from './messages.js';
export { createValidator, validateDocument, validate, type Validator, type EntrySource } from './validator.js';
