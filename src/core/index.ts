/**
 * The pure core of resourcesync: the model of every ResourceSync document, streaming parse and
 * write, validation, W3C Datetime and fixity values. No file system, network or clock here.
 * @example
 * import { readDocument, validate } from 'resourcesync/core';
 * const reader = await readDocument(bytes);
 * const { issues } = await validate(reader, { spec: '1.1' });
 */
export { mediaType, DEFAULT_MEDIA_TYPE } from './media-type.js';
export { readDocument, parseDocument, type DocumentReader, type ReadOptions } from './xml/read-document.js';
export { type ByteInput } from './xml/decode-input.js';
export { writeDocument, writeDocumentString, type WriteDocumentOptions, type Compress } from './xml/write-document.js';
export { writeDocumentSet, type PartSink, type PartInfo, type PartSummary, type DocumentSetOptions, type DocumentSetResult } from './xml/write-document-set.js';
export { SITEMAP_NS, RS_NS, REL_PATCH, REL_RESOURCESYNC, WELL_KNOWN_PATH, DOCUMENT_CAPABILITIES, type DocumentCapability, CAPABILITY_LIST_ENTRIES, CHANGE_TYPES, type ChangeType, CHANGEFREQS, LINK_RELATIONS, PRI_MIN, PRI_MAX, HASH_ALGORITHMS, type HashAlgorithm, LIMITS, type Limits } from './constants.js';
export { isResourceSyncError, type ErrorCode, type ResourceSyncErrorOptions, ResourceSyncError } from './errors.js';
export { parseHashes, formatHashes, isKnownHashAlgorithm, parseLength, type HashValue } from './hash.js';
export { parseW3CDatetime, formatW3CDatetime, normalizeW3CDatetime, type DatetimeGranularity, type W3CDatetime } from './w3c-datetime.js';
export { feedRecord, parseFeedLine, type FeedRecord } from './feed-record.js';
export { readManifestPath, type ManifestPath } from './manifest-path.js';
export { WARC_VERSION, WARC_MEDIA_TYPE, WARC_RECORD_TYPES, formatWarcHeader, parseWarcHeader, parseWarcDigest, base32, warcDate, cdxTimestamp, surtKey, type WarcRecordType, type WarcField, type WarcHeader, type WarcDigest } from './warc.js';
export { robotsSitemaps, htmlResourceSyncLinks } from './discovery-hints.js';
export { parseXmppAccountUri, xmppPubsubUri, parseXmppPubsubUri, type XmppAccountUri, XMPP_CLIENT_PORT } from './xmpp-uri.js';
export { type ForeignAttribute, type ForeignElement, type Md, type Ln, MD_ATTRIBUTES, LN_ATTRIBUTES, type RootElement, type Entry, type DocumentHeader, type ResourceSyncDocument, PARSE_NOTE_CODES, type ParseNoteCode, type ParseNote } from './model/types.js';
export { documentKind, documentKindById, isIndex, isPartOf, DOCUMENT_KINDS } from './model/document-kinds.js';
export { type DocumentKind, type DocumentKindId, type EntryOrder, type EntryRules, type LinkRules, type TimeAttribute, type TopTimes, type Use } from './model/kinds/rules.js';
export { notificationWindow, changeNotification, frameworkNotification, CHANGE_NOTIFICATION, FRAMEWORK_NOTIFICATION, LEGACY_CHANGE_NOTIFICATION, FRAMEWORK_CHANGES, type NotificationWindow, type ChangeNotificationInit, type FrameworkChange } from './model/notification.js';
export { ISSUE_CODES, hasErrors, type IssueCode, type Severity, type ValidationIssue, type ValidateOptions } from './validate/index.js';
export { MESSAGES, formatMessage, type IssueDefinition, type MessageParams } from './validate/index.js';
export { createValidator, validateDocument, validate, type Validator, type EntrySource } from './validate/index.js';
