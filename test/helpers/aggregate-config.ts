// The problems an aggregate configuration is refused with, for the tests of its fields.
import assert from 'node:assert/strict';
import { parseAggregateConfig, type ConfigIssue } from '../../src/aggregate/config.js';
import { isResourceSyncError } from '../../src/core/errors.js';

/**
 * The issues `parseAggregateConfig` refuses `text` with (as read from `/etc/agg.yaml`); fails the test when it is
 * accepted, or when the error is not `RS_INVALID_ARGUMENT` or repeats `secret`.
 */
export function configIssues(text: string, secret?: string): ConfigIssue[] {
  try {
    parseAggregateConfig(text, '/etc/agg.yaml');
  } catch (error) {
    assert.ok(isResourceSyncError(error, 'RS_INVALID_ARGUMENT'), String(error));
    if (secret !== undefined) assert.ok(!error.message.includes(secret), 'the password repeated');
    return (error.data as { issues: ConfigIssue[] }).issues;
  }
  assert.fail('expected the configuration to be refused');
}
