import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Scram } from './xmpp-scram.js';

void test('Scram: the exchanges of RFC 5802 §5 (SHA-1) and RFC 7677 §3 (SHA-256)', async () => {
  const sha1 = new Scram('sha1', 'user', 'pencil', 'fyko+d2lbbFgONRv9qkxdawL');
  assert.equal(sha1.first(), 'n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL');
  assert.equal(
    await sha1.final('r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096'),
    'c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=',
  );
  assert.equal(sha1.verify('v=rmF9pqV8S7suAoZWja4dJRkFsKQ='), true);
  assert.equal(sha1.verify('v=AAAAAAAAAAAAAAAAAAAAAAAAAAA='), false);

  const sha256 = new Scram('sha256', 'user', 'pencil', 'rOprNGfwEbeRWgbNEkqO');
  assert.equal(sha256.first(), 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO');
  assert.equal(
    await sha256.final('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'),
    'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  );
  assert.equal(sha256.verify('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='), true);
});

void test('Scram: refuses a nonce that does not extend the client one, and absurd iteration counts', async () => {
  await assert.rejects(new Scram('sha1', 'u', 'p', 'abc').final('r=xyz123,s=QSXCR+Q6sek8bf92,i=4096'), /malformed/);
  await assert.rejects(new Scram('sha1', 'u', 'p', 'abc').final('r=abc,s=QSXCR+Q6sek8bf92,i=4096'), /malformed/);
  await assert.rejects(new Scram('sha1', 'u', 'p', 'abc').final('r=abcd,s=QSXCR+Q6sek8bf92,i=99999999'), /not acceptable/);
  assert.equal(new Scram('sha1', 'a=b,c', 'p', 'n').first(), 'n,,n=a=3Db=2Cc,r=n');
});

void test('Scram: the key is derived without blocking the event loop', async () => {
  const scram = new Scram('sha256', 'u', 'p', 'abc');
  scram.first();
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  try {
    await scram.final('r=abcd,s=QSXCR+Q6sek8bf92,i=200000');
  } finally {
    clearInterval(timer);
  }
  assert.ok(ticks > 0, 'timers ran while the key was derived');
});
