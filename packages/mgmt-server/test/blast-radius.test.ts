import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildOutputSnapshot, resourceId, type Resource } from '@meshrelay/api';
import { assessOutput, type HeldState } from '../src/blast-radius.ts';

const CONFIG = { maxDeleteShare: 0.5, minResources: 5 };

function configMap(name: string): Resource {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' } } as Resource;
}

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

function held(keys: string[], clusters: string[]): HeldState {
  return {
    keys: new Set(keys.map((k) => resourceId(configMap(k)))),
    provenance: clusters.map((cluster) => ({ cluster, inputHash: 'h'.repeat(64) })),
  };
}

function next(keys: string[], clusters: string[]) {
  return buildOutputSnapshot({
    cluster: 'c',
    resources: keys.map(configMap),
    provenance: clusters.map((cluster) => ({ cluster, inputHash: 'i'.repeat(64) })),
  });
}

const cases: Array<{
  name: string;
  held: HeldState;
  next: ReturnType<typeof next>;
  registered: string[];
  want: Record<string, unknown>;
}> = [
  {
    name: 'nothing deleted, more added',
    held: held(names('r', 6), ['a']),
    next: next([...names('r', 6), 'extra'], ['a']),
    registered: ['a'],
    want: { verdict: 'send', deleted: 0 },
  },
  {
    name: 'exactly the allowed share deleted',
    held: held(names('r', 6), ['a']),
    next: next(names('r', 3), ['a']),
    registered: ['a'],
    want: { verdict: 'send', deleted: 3 },
  },
  {
    name: 'more than the allowed share deleted',
    held: held(names('r', 6), ['a']),
    next: next(names('r', 2), ['a']),
    registered: ['a'],
    want: { verdict: 'hold', reason: 'delete-share', deleted: 4, held: 6, missingClusters: [] },
  },
  {
    name: 'everything deleted from an output below the minimum size',
    held: held(names('r', 4), ['a']),
    next: next([], ['a']),
    registered: ['a'],
    want: { verdict: 'send', deleted: 4 },
  },
  {
    name: 'one deletion while a registered contributor is missing',
    held: held(names('r', 10), ['a', 'b']),
    next: next(names('r', 9), ['a']),
    registered: ['a', 'b'],
    want: { verdict: 'hold', reason: 'missing-inputs', deleted: 1, held: 10, missingClusters: ['b'] },
  },
  {
    name: 'a deletion after the missing contributor was deregistered',
    held: held(names('r', 10), ['a', 'b']),
    next: next(names('r', 9), ['a']),
    registered: ['a'],
    want: { verdict: 'send', deleted: 1 },
  },
  {
    name: 'additions only while a contributor is missing',
    held: held(names('r', 3), ['a', 'b']),
    next: next([...names('r', 3), 'extra'], ['a']),
    registered: ['a', 'b'],
    want: { verdict: 'send', deleted: 0 },
  },
  {
    name: 'a first output to an agent that holds nothing',
    held: held([], []),
    next: next(names('r', 3), ['a']),
    registered: ['a'],
    want: { verdict: 'send', deleted: 0 },
  },
];

for (const c of cases) {
  test(`given ${c.name}, when the guard assesses the next output, then it says ${String(c.want['verdict'])}${c.want['reason'] ? ` (${String(c.want['reason'])})` : ''}`, () => {
    const verdict = assessOutput(CONFIG, c.held, c.next, new Set(c.registered));
    const { message, ...rest } = verdict as typeof verdict & { message?: string };
    assert.deepEqual(rest, c.want);
    if (verdict.verdict === 'hold')
      assert.match(message ?? '', new RegExp(`would delete ${verdict.deleted} of ${verdict.held} resources`));
  });
}
