import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { yamlDocument } from '../src/apply/yaml-block.ts';

test('given a resource, when written as YAML, then it is block style and reads back equal', () => {
  const resource = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'reviews', namespace: 'bookinfo', labels: { app: 'reviews' } },
    spec: {
      hosts: ['reviews.global'],
      ports: [{ number: 9080, name: 'http' }],
      endpoints: [],
      exportTo: ['.'],
      workloadSelector: {},
    },
  };
  const text = yamlDocument(resource);
  assert.equal(
    text,
    [
      'apiVersion: networking.istio.io/v1',
      'kind: ServiceEntry',
      'metadata:',
      '  name: reviews',
      '  namespace: bookinfo',
      '  labels:',
      '    app: reviews',
      'spec:',
      '  hosts:',
      '    - reviews.global',
      '  ports:',
      '    - number: 9080',
      '      name: http',
      '  endpoints: []',
      '  exportTo:',
      '    - "."',
      '  workloadSelector: {}',
      '',
    ].join('\n'),
  );
  assert.deepEqual(parse(text), resource);
});

test('given strings a YAML reader could take for something else, when written, then they read back as the same strings', () => {
  const tricky = [
    '',
    'true',
    'False',
    'yes',
    'No',
    'on',
    'OFF',
    'y',
    'n',
    'null',
    '~',
    '1',
    '1.5',
    '1e3',
    '0x1F',
    '0o17',
    '.inf',
    '-.nan',
    '010',
    '1:20',
    '2001-12-14',
    'a: b',
    '- x',
    '#comment',
    'a #b',
    "'quoted'",
    '"double"',
    '@at',
    '`tick`',
    '*alias',
    '&anchor',
    '!tag',
    '%directive',
    '|',
    '>',
    '{x}',
    '[y]',
    ' leading',
    'trailing ',
    'multi\nline',
    'tab\there',
    'é',
    'emoji 😀',
    '\u0085nel',
    '\u2028',
    '\ufeffbom',
    'back\\slash',
    '?',
    ':',
  ];
  const value = { strings: tricky, keys: Object.fromEntries(tricky.filter((s) => s !== '').map((s, i) => [s, i])) };
  assert.deepEqual(parse(yamlDocument(value)), value);
});

test('given nested collections and every scalar kind, when written, then they read back equal', () => {
  const value = {
    matrix: [[1, 2], [], [[3]], [{ a: [] }]],
    list: [{ a: 1, b: { c: [true, false, null] } }, {}, [{ d: -0.25 }], 'plain', 42],
    empty: { nested: {} },
    numbers: [0, -1, 1.5e-7, 1e21, Number.MAX_SAFE_INTEGER],
  };
  assert.deepEqual(parse(yamlDocument(value)), value);
});

test('given a value JSON cannot carry, when written, then it is refused naming what it is', () => {
  assert.throws(() => yamlDocument({ a: Number.NaN }), /non-finite number \(NaN\)/);
  assert.throws(() => yamlDocument({ a: 1n }), /a bigint has no YAML form/);
});
