import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAuthority, originOf } from './authority.js';
import { isResourceSyncError } from '../core/errors.js';

void test('origins are compared normalised: case and default ports', () => {
  const a = createAuthority({ origins: ['HTTP://Example.COM:80/some/path', 'https://b.example:8443'] });
  assert.deepEqual(a.origins, ['http://example.com', 'https://b.example:8443']);
  assert.ok(a.allows('http://example.com/res1'));
  assert.ok(a.allows('http://EXAMPLE.com:80/x'));
  assert.ok(a.allows('https://b.example:8443/'));
  assert.ok(!a.allows('https://example.com/res1'), 'scheme differs');
  assert.ok(!a.allows('http://example.com:8080/'), 'port differs');
  assert.ok(!a.allows('http://example.com.evil.net/'));
  assert.ok(!a.allows('file:///etc/passwd'));
  assert.ok(!a.allows('/relative'));
  assert.ok(!a.allows('http://user:pw@example.com/'), 'credentials in URLs are refused');
});

void test('check throws a recoverable RS_AUTHORITY', () => {
  const a = createAuthority({ origins: ['http://127.0.0.1:1234'] });
  assert.doesNotThrow(() => a.check('http://127.0.0.1:1234/a'));
  assert.throws(
    () => a.check('http://127.0.0.2:1234/a'),
    (e: unknown) => isResourceSyncError(e, 'RS_AUTHORITY') && e.recoverable && e.message.startsWith("URL 'http://127.0.0.2:1234/a'"),
  );
  assert.throws(() => createAuthority({ origins: ['ftp://x'] }), (e: unknown) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'));
  assert.equal(originOf('javascript:alert(1)'), undefined);
});
