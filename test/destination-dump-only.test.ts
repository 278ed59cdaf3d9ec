import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { dumpXml, manifestXml, yazlZip } from './helpers/dump-fixtures.js';
import { tempDir } from './helpers/tmp.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { audit } from '../src/destination/audit.js';

const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';

void test('a Source whose only inventory is its Change Dumps: a second sync writes nothing again, and audit compares with their manifests', async () => {
  const server = await startTestServer();
  const tmp = await tempDir('rs-cd-only-');
  try {
    const origin = server.origin;
    const cap = `${origin}/capabilitylist.xml`;
    const t = (h: number): string => new Date(Date.UTC(2024, 0, 1, h)).toISOString();
    const manifest = manifestXml(
      'changedump-manifest',
      [
        { loc: `${origin}/a.txt`, path: '/a.txt', data: 'alpha', change: 'created', lastmod: t(1) },
        { loc: `${origin}/b.txt`, path: '/b.txt', data: 'beta', change: 'created', lastmod: t(2) },
        { loc: `${origin}/gone.txt`, path: '/gone.txt', data: 'brief', change: 'created', lastmod: t(3) },
        { loc: `${origin}/gone.txt`, change: 'deleted', lastmod: t(4) },
        { loc: `${origin}/a.txt`, path: '/a2.txt', data: 'alpha, later', change: 'updated', lastmod: t(5) },
      ],
      cap,
    ).replace('from="2013-01-02T00:00:00Z"', `from="${t(0)}" until="${t(6)}"`);
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifest },
      { name: 'a.txt', data: 'alpha' },
      { name: 'b.txt', data: 'beta' },
      { name: 'gone.txt', data: 'brief' },
      { name: 'a2.txt', data: 'alpha, later' },
    ]);
    server.set('/cd-1.zip', zip);
    server.set('/cd-1-manifest.xml', manifest);
    server.set(
      '/changedump.xml',
      dumpXml('changedump', [
        { loc: `${origin}/cd-1.zip`, zip, from: t(0), until: t(6), contents: `${origin}/cd-1-manifest.xml` },
      ]).replace('from="2013-01-01T00:00:00Z"', `from="${t(0)}"`),
    );
    server.set(
      '/capabilitylist.xml',
      `<urlset ${NS}><rs:md capability="capabilitylist"/><url><loc>${origin}/changedump.xml</loc><rs:md capability="changedump"/></url></urlset>`,
    );

    const dest = join(tmp.dir, 'mirror');
    const first = await sync({ source: cap, dest, durability: new RenameOnly(), delete: true });
    assert.deepEqual(first.failed, [], JSON.stringify(first));
    assert.ok(first.created > 0, JSON.stringify(first));
    const ino = (await stat(join(dest, 'a.txt'))).ino;
    const second = await sync({ source: cap, dest, durability: new RenameOnly(), delete: true });
    assert.deepEqual([second.created, second.updated, second.failed.length], [0, 0, 0]);
    assert.equal((await stat(join(dest, 'a.txt'))).ino, ino, 'not written again');

    const a = await audit({ source: cap, dest });
    assert.deepEqual(
      [a.inSync, a.unchanged, a.counts],
      [true, 2, { missing: 0, extra: 0, changed: 0, failed: 0 }],
      JSON.stringify(a),
    );
    await writeFile(join(dest, 'b.txt'), 'BETA');
    const b = await audit({ source: cap, dest });
    assert.deepEqual(
      b.changed.map((c) => c.path),
      ['b.txt'],
    );
  } finally {
    await server.close();
    await tmp.cleanup();
  }
});
