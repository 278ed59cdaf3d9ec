// S3 mirror writes: N small resources (1 KB) written to a throwaway Ceph RGW through the S3 storage the way a sync
// writes them (writeVerified: length and md5 checked, then one PutObject with Content-MD5 that RGW checks), 16 at once.
// Baseline in the same run, against the same server: a bare loop of PutObject calls (same client settings, same
// concurrency, no digest). Each round runs both, in alternating order; the figure is the median of the rounds' ratios
// (the machine's load moves both alike within a round), with the best of each beside it. Every object written through
// the storage is read back and compared afterwards. Target (issue 24): ≥ 0.8× the bare loop.
// Needs Debian's ceph-mon, ceph-osd, radosgw, ceph-common (test/helpers/ceph-rgw.sh); skips, saying so, without them.
import { createHash } from 'node:crypto';
import { Agent } from 'node:http';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const N = Number(process.env.RS_BENCH_S3_RESOURCES ?? 1000);
const SIZE = 1024;
const CONCURRENCY = 16;
const ROUNDS = 5;
const BUCKET = 'bench';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { RGW_SKIP, startRgw } = await import(join(ROOT, 'dist/test/helpers/rgw.js'));
if (RGW_SKIP !== false) {
  console.log(`s3: skipped: ${RGW_SKIP}`);
  process.exit(0);
}
const { S3Client, PutObjectCommand, ListObjectsV2Command, GetObjectCommand } = await import('@aws-sdk/client-s3');
const { createS3Storage } = await import(join(ROOT, 'dist/src/destination/s3-storage.js'));
const { writeVerified } = await import(join(ROOT, 'dist/src/destination/verified-write.js'));

const bodies = Array.from({ length: N }, (_, i) => Buffer.from(`resource ${i} `.padEnd(SIZE, String.fromCharCode(97 + (i % 26)))));
const md5s = bodies.map((b) => createHash('md5').update(b).digest('hex'));
const keyOf = (i) => `r/${i % 100}/${i}.txt`;

/** Runs `work(i)` for i in 0..n-1, `CONCURRENCY` at once; resolves the seconds taken. */
async function timed(n, work) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await work(next++);
    }),
  );
  return (performance.now() - t0) / 1000;
}

async function* once(body) {
  yield body;
}

const rgw = await startRgw();
try {
  await rgw.createBucket(BUCKET);
  const credentials = { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey };
  const client = new S3Client({
    endpoint: rgw.endpoint,
    region: rgw.region,
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }) },
  });
  const bare = (prefix) => timed(N, (i) => client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}/${keyOf(i)}`, Body: bodies[i], ContentLength: SIZE })));
  const storages = [];
  const ours = (prefix) => {
    const storage = createS3Storage({ bucket: BUCKET, prefix, endpoint: rgw.endpoint, region: rgw.region, credentials });
    storages.push(storage);
    return timed(N, (i) => writeVerified({ storage, relPath: keyOf(i), body: once(bodies[i]), expected: { length: SIZE, hashes: [{ algorithm: 'md5', digest: md5s[i] }] } })).then(async (s) => {
      await storage.settle();
      return s;
    });
  };
  await bare('warm'); // the first writes create RGW's pools and index objects
  const best = { bare: Infinity, ours: Infinity };
  const ratios = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['bare', 'ours'] : ['ours', 'bare'];
    const took = {};
    for (const which of order) {
      const seconds = which === 'bare' ? await bare(`bare-${round}`) : await ours(`ours-${round}`);
      console.log(`  round ${round + 1} ${which}: ${N} × ${SIZE} B in ${seconds.toFixed(2)} s (${Math.round(N / seconds)}/s)`);
      best[which] = Math.min(best[which], seconds);
      took[which] = seconds;
    }
    ratios.push(took.bare / took.ours);
  }
  ratios.sort((a, b) => a - b);
  const median = ratios[Math.floor(ratios.length / 2)];
  // every object written through the storage, read back and compared
  let checked = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let token;
    for (let page = 0; page < 1000; page++) {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `ours-${round}/`, ContinuationToken: token }));
      const objects = listed.Contents ?? [];
      await timed(objects.length, async (k) => {
        const key = objects[k].Key;
        const i = Number(/(\d+)\.txt$/.exec(key)[1]);
        const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
        const bytes = Buffer.from(await got.Body.transformToByteArray());
        if (createHash('md5').update(bytes).digest('hex') !== md5s[i]) throw new Error(`object ${key} differs from what was written`);
        checked++;
      });
      if (listed.IsTruncated !== true) break;
      token = listed.NextContinuationToken;
    }
  }
  if (checked !== N * ROUNDS) throw new Error(`${checked} objects found, ${N * ROUNDS} written`);
  console.log(`s3 bare PutObject loop: best ${Math.round(N / best.bare)} objects/s (baseline)`);
  console.log(`s3 storage writes (verified, Content-MD5): best ${Math.round(N / best.ours)} objects/s (${(best.bare / best.ours).toFixed(2)}x baseline); ${checked} objects read back, all identical`);
  console.log(`s3 ratio per round: ${ratios.map((r) => r.toFixed(2)).join(' ')}; median ${median.toFixed(2)}x`);
  console.log(`s3 target ≥ 0.8x the bare loop (median of rounds): ${median >= 0.8 ? 'met' : 'MISSED'}`);
  console.log(`s3 peak RSS of this process: ${Math.round(process.resourceUsage().maxRSS / 1024)} MB; RGW (mon, memstore OSD, radosgw) now: ${rgw.memoryMB()} MB`);
  for (const storage of storages) storage.close();
  client.destroy();
} finally {
  await rgw.stop();
}
