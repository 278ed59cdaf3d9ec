import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResourceSyncError } from '../core/errors.js';
import { isS3Url, parseS3Url, s3Location, s3Url } from './s3-url.js';

function refused(run: () => unknown, message: RegExp): void {
  assert.throws(run, (err: unknown) => err instanceof ResourceSyncError && err.code === 'RS_INVALID_ARGUMENT' && message.test(err.message));
}

void test('parseS3Url reads the bucket and a normalised prefix; other URLs are not its business', () => {
  assert.deepEqual(parseS3Url('s3://mirror'), { bucket: 'mirror', prefix: '' });
  assert.deepEqual(parseS3Url('s3://mirror/'), { bucket: 'mirror', prefix: '' });
  assert.deepEqual(parseS3Url('S3://my.bucket-1/site/a/'), { bucket: 'my.bucket-1', prefix: 'site/a' });
  assert.deepEqual(parseS3Url('s3://mirror//site'), { bucket: 'mirror', prefix: 'site' });
  assert.deepEqual(parseS3Url('s3://mirror/name with spaces/%41'), { bucket: 'mirror', prefix: 'name with spaces/%41' }, 'taken literally');
  assert.equal(parseS3Url('/var/mirror'), undefined);
  assert.equal(parseS3Url('https://mirror/x'), undefined);
  assert.equal(isS3Url('S3://x'), true);
  assert.equal(s3Url({ bucket: 'b12', prefix: '' }), 's3://b12/');
});

void test('parseS3Url refuses bucket names outside S3\'s rules, saying why', () => {
  refused(() => parseS3Url('s3:///x'), /'s3:\/\/\/x' does not name a bucket \(s3:\/\/BUCKET\/PREFIX\)/);
  for (const bucket of ['ab', 'a'.repeat(64), 'Mirror', 'under_score', '-start', 'end-', 'end.', 'two..dots', '192.168.1.2', 'sp ace', 'x?y', 'x#y']) {
    refused(() => parseS3Url(`s3://${bucket}/p`), /does not name a bucket: '.*' is not 3-63 lower-case letters/);
  }
  assert.deepEqual(parseS3Url(`s3://${'a'.repeat(63)}`), { bucket: 'a'.repeat(63), prefix: '' });
  assert.deepEqual(parseS3Url('s3://abc'), { bucket: 'abc', prefix: '' });
});

void test('parseS3Url refuses unsafe prefixes: .., ., empty segments, backslashes, control characters, ? and #', () => {
  refused(() => parseS3Url('s3://mirror/a/../b'), /has a prefix 'a\/\.\.\/b' with a '\.\.' segment/);
  refused(() => parseS3Url('s3://mirror/..'), /'\.\.' segment/);
  refused(() => parseS3Url('s3://mirror/a/./b'), /'\.' segment/);
  refused(() => parseS3Url('s3://mirror/a//b'), /an empty segment/);
  refused(() => parseS3Url('s3://mirror/a\\b'), /backslash/);
  refused(() => parseS3Url('s3://mirror/a\nb'), /control character/);
  refused(() => parseS3Url('s3://mirror/a?x=1'), /'\?'/);
  refused(() => parseS3Url('s3://mirror/a#f'), /'#'/);
});

void test('s3Location checks a bucket and prefix given apart, with the same rules', () => {
  assert.deepEqual(s3Location('mirrors', '/site/a/'), { bucket: 'mirrors', prefix: 'site/a' });
  assert.deepEqual(s3Location('mirrors'), { bucket: 'mirrors', prefix: '' });
  refused(() => s3Location('Mirrors', 'x'), /'s3:\/\/Mirrors\/x' does not name a bucket/);
  refused(() => s3Location('mirrors', 'a/../b'), /'\.\.' segment/);
  refused(() => s3Location('', 'x'), /does not name a bucket/);
});
