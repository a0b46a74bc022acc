import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatAge, formatTimeLeft, renderTable, shellQuote, shortHash } from '../src/format.ts';

const NOW = new Date('2026-11-22T12:00:00Z');

test('given ages across units, when formatted, then the largest sensible unit is used', () => {
  const cases: readonly [string | null | undefined, string][] = [
    [undefined, '-'],
    [null, '-'],
    ['not a date', '-'],
    ['2026-11-22T12:00:05Z', '0s'],
    ['2026-11-22T11:59:18Z', '42s'],
    ['2026-11-22T11:58:01Z', '119s'],
    ['2026-11-22T11:53:00Z', '7m'],
    ['2026-11-22T07:00:00Z', '5h'],
    ['2026-11-19T12:00:00Z', '3d'],
  ];
  for (const [since, want] of cases) assert.equal(formatAge(since, NOW), want, String(since));
});

test('given times ahead, when the time left is formatted, then it rounds up in the units of ages and a passed time is "0s"', () => {
  const cases: readonly [string | null | undefined, string][] = [
    [undefined, '-'],
    ['not a date', '-'],
    ['2026-11-22T11:59:00Z', '0s'],
    ['2026-11-22T12:00:41.200Z', '42s'],
    ['2026-11-22T12:07:00Z', '7m'],
    ['2026-11-22T17:00:00Z', '5h'],
  ];
  for (const [until, want] of cases) assert.equal(formatTimeLeft(until, NOW), want, String(until));
});

test('given rows of different widths, when rendered, then columns align and lines carry no trailing spaces', () => {
  const text = renderTable(
    ['NAME', 'WARM'],
    [
      ['east-cluster', 'True'],
      ['w', ''],
    ],
  );

  assert.equal(text, 'NAME           WARM\neast-cluster   True\nw\n');
});

test('given a hash or none, when shortened, then 12 characters or "-"', () => {
  assert.equal(shortHash('0123456789abcdef'), '0123456789ab');
  assert.equal(shortHash(null), '-');
  assert.equal(shortHash(undefined), '-');
});

test('given words with and without shell metacharacters, when quoted, then only unsafe words are quoted', () => {
  assert.equal(shellQuote('/tmp/a.token'), '/tmp/a.token');
  assert.equal(shellQuote('my dir/ca.pem'), "'my dir/ca.pem'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
});
