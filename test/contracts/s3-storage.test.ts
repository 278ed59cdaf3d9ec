/**
 * The MirrorStorage contract against a bucket of a real S3-compatible server: Ceph RGW (test/helpers/rgw.ts), which
 * checks `Content-MD5`. Each case gets a prefix of its own in one bucket; skipped, saying why, where Ceph is missing.
 */
import { after, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { createS3Storage, type S3Storage } from '../../src/destination/index.js';
import { RGW_SKIP, startRgw, type RgwServer } from '../helpers/rgw.js';
import { describeMirrorStorageContract } from './mirror-storage.js';

const BUCKET = 'contract';
let server: Promise<RgwServer> | undefined;

/** The file's RGW, started at the first case that needs it, with its bucket. */
function rgw(): Promise<RgwServer> {
  server ??= startRgw().then(async (started) => {
    await started.createBucket(BUCKET);
    return started;
  });
  return server;
}

function open(r: RgwServer, prefix: string): S3Storage {
  return createS3Storage({ bucket: BUCKET, prefix, endpoint: r.endpoint, region: r.region, credentials: { accessKeyId: r.accessKeyId, secretAccessKey: r.secretAccessKey } });
}

if (RGW_SKIP !== false) {
  void test('MirrorStorage contract: S3 storage on Ceph RGW', { skip: RGW_SKIP }, () => undefined);
} else {
  after(async () => (server === undefined ? undefined : (await server).stop()));
  describeMirrorStorageContract('S3 storage on Ceph RGW', async () => {
    const r = await rgw();
    const prefix = `case-${randomBytes(6).toString('hex')}`;
    const impl = open(r, prefix);
    const opened: S3Storage[] = [impl];
    return {
      impl,
      cleanup: async () => {
        for await (const item of impl.list()) await impl.remove(item.key);
        await impl.discardStaged();
        for (const storage of opened) storage.close();
      },
      reopen: () => {
        const again = open(r, prefix);
        opened.push(again);
        return Promise.resolve(again);
      },
    };
  });
}
