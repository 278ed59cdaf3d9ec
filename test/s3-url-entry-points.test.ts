// Every entry point that takes an `s3://bucket/prefix` (or a bucket and prefix apart) reads it with the one reader,
// src/node/s3-url.ts, and refuses the same bad cases with the same words: the CLI's `sync`, `audit`, `sync --queue`
// and `build --out` with exit 2 and the message; the library's createS3Storage, createS3Documents, syncWithQueue and
// a worker's openStorage with RS_INVALID_ARGUMENT, before any connection (nothing listens on the URLs used here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceSyncError } from '../src/core/errors.js';
import { createS3Storage, syncWithQueue } from '../src/destination/index.js';
import { openStorage } from '../src/destination/queue-jobs.js';
import { createS3Documents } from '../src/source/index.js';
import { runCli } from './helpers/mirror-check.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const SOURCE = 'http://127.0.0.1:9/capabilitylist.xml';
const PG = 'postgres://rs@127.0.0.1:9/x';

/** Bad URLs and the words that say why. */
const BAD: [string, RegExp][] = [
  ['s3:///site', /does not name a bucket \(s3:\/\/BUCKET\/PREFIX\)/],
  ['s3://Upper_Case/site', /does not name a bucket: 'Upper_Case' is not 3-63 lower-case letters/],
  ['s3://ab/site', /does not name a bucket: 'ab'/],
  ['s3://mirror/a/../b', /has a prefix 'a\/\.\.\/b' with a '\.\.' segment/],
  ['s3://mirror/a//b', /has a prefix 'a\/\/b' with an empty segment/],
  ['s3://mirror/a?b', /with a '\?', '#', backslash or control character/],
];

function invalid(message: RegExp): (err: unknown) => boolean {
  return (err) => err instanceof ResourceSyncError && err.code === 'RS_INVALID_ARGUMENT' && message.test(err.message);
}

void test('CLI: sync, audit, sync --queue and build --out exit 2 on a malformed s3:// URL, saying why', async () => {
  const work = await mkdtemp(join(tmpdir(), 'rs-s3-url-'));
  try {
    await writeFile(join(work, 'a.txt'), 'a\n');
    const state = join(work, 'state.sqlite');
    for (const [url, why] of BAD) {
      const runs = {
        sync: await runCli(['sync', SOURCE, url, '--state', state]),
        audit: await runCli(['audit', SOURCE, url, '--state', state]),
        queue: await runCli(['sync', SOURCE, url, '--state', PG, '--queue', PG]),
        build: await runCli(['build', work, '--base-url', 'http://example.org/', '--out', url, '--snapshots', join(work, 'h.sqlite')]),
      };
      for (const [name, ran] of Object.entries(runs)) {
        assert.equal(ran.status, 2, `${name} ${url}: ${ran.stderr}`);
        assert.match(ran.stderr, why, `${name} ${url}`);
        assert.ok(ran.stderr.includes(url.split('?')[0]!), `${name} names the URL: ${ran.stderr}`);
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

void test('library: createS3Storage, createS3Documents, syncWithQueue and openStorage refuse the same URLs with RS_INVALID_ARGUMENT', async () => {
  const endpoint = 'http://127.0.0.1:9';
  for (const [url, why] of BAD) {
    const bucket = /^s3:\/\/([^/]*)/.exec(url)![1]!;
    const prefix = url.slice(`s3://${bucket}/`.length);
    assert.throws(() => createS3Storage({ bucket, prefix, endpoint }), invalid(why), `createS3Storage ${url}`);
    assert.throws(() => createS3Documents({ bucket, prefix, endpoint }), invalid(why), `createS3Documents ${url}`);
    assert.throws(() => openStorage({ kind: 's3', url }, { s3Endpoint: endpoint }), invalid(why), `openStorage ${url}`);
    await assert.rejects(syncWithQueue({ source: SOURCE, dest: url, queue: PG, stateUrl: PG }), invalid(why), `syncWithQueue ${url}`);
  }
  // a prefix given apart is normalised the same way as in a URL
  const storage = createS3Storage({ bucket: 'mirror', prefix: '/site/a/', endpoint });
  try {
    assert.equal(storage.location, 's3://mirror/site/a');
  } finally {
    storage.close();
  }
});
