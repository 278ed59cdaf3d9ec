import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLinkHeader } from './link-header.js';

void test('Link header: Z39.99 Example 10, folded over two lines', () => {
  const links = parseLinkHeader('<http://www.example.com/dataset1/capabilitylist.xml>;\r\n         rel="resourcesync"');
  assert.deepEqual(links, [
    {
      target: 'http://www.example.com/dataset1/capabilitylist.xml',
      rel: ['resourcesync'],
      params: { rel: 'resourcesync' },
    },
  ]);
});

void test('Link header: several links, rel lists, quoted commas and semicolons, token values', () => {
  const v =
    '<https://a.example/x>; rel="next"; title="a, b; c", <https://a.example/cl.xml>; rel="ResourceSync describedby"; type=application/xml,' +
    " </rel/cl2.xml> ; rel=resourcesync ; title*=UTF-8'de'n%c3%a4chstes";
  const links = parseLinkHeader(v);
  assert.equal(links.length, 3);
  assert.deepEqual(links[0], {
    target: 'https://a.example/x',
    rel: ['next'],
    params: { rel: 'next', title: 'a, b; c' },
  });
  assert.deepEqual(links[1]!.rel, ['resourcesync', 'describedby']);
  assert.equal(links[1]!.params.type, 'application/xml');
  assert.equal(links[2]!.target, '/rel/cl2.xml');
  assert.deepEqual(links[2]!.rel, ['resourcesync']);
  assert.equal(links[2]!.params.title, 'nächstes');
});

void test('Link header: escapes in quoted strings, first rel wins, malformed links skipped', () => {
  const links = parseLinkHeader(
    '<u1>; rel="a\\"b"; rel="ignored", garbage; rel=x, <u2>; rel="resourcesync", <u3>; rel="unterminated',
  );
  assert.deepEqual(
    links.map((l) => [l.target, l.rel]),
    [
      ['u1', ['a"b']],
      ['u2', ['resourcesync']],
    ],
  );
  assert.deepEqual(parseLinkHeader(''), []);
  assert.deepEqual(parseLinkHeader('<unclosed; rel=resourcesync'), []);
});
