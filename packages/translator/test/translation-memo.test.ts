import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProblemSink } from '../src/engine/problems.ts';
import { RunMemo } from '../src/engine/translation-memo.ts';

/** A computation that counts its calls and reports one problem naming its key. */
function counted() {
  let calls = 0;
  return {
    calls: () => calls,
    compute: (key: string) => (own: ProblemSink) => {
      calls += 1;
      own.add({ cluster: 'c1', reason: `computed ${key}` });
      return { key };
    },
  };
}

test('given grouped units, when the next run asks for the same group and key, then the value is reused and its problems are replayed; a unit a run did not ask for is forgotten', () => {
  const memo = new RunMemo();
  const work = counted();
  const run = (keys: readonly number[]) => {
    const problems = new ProblemSink();
    const row = memo.row('t', 'group');
    const values = keys.map((k) => row.unit(k, problems, work.compute(String(k))));
    memo.turn();
    return { values, reasons: problems.all().map((p) => p.reason) };
  };
  const first = run([1, 2]);
  assert.equal(work.calls(), 2);
  const second = run([1, 2]);
  assert.equal(work.calls(), 2, 'nothing recomputed');
  assert.equal(second.values[0], first.values[0]);
  assert.deepEqual(second.reasons, ['computed 1', 'computed 2']);
  run([1]);
  run([1, 2]);
  assert.equal(work.calls(), 3, 'key 2 was dropped by the run that did not ask for it, and computed again');
});

test('given grouped units, when another group asks for the same key, then it is computed for that group', () => {
  const memo = new RunMemo();
  const work = counted();
  const a = memo.row('t', 'group-a').unit('k', new ProblemSink(), work.compute('a'));
  const b = memo.row('t', 'group-b').unit('k', new ProblemSink(), work.compute('b'));
  assert.deepEqual([a, b, work.calls()], [{ key: 'a' }, { key: 'b' }, 2]);
});

test('given a grouped kept value, when the next run keeps an equal one, then the previous object is returned; an unequal one replaces it', () => {
  const memo = new RunMemo();
  const same = (x: { n: number }, y: { n: number }) => x.n === y.n;
  const first = memo.row('t', 'vd').keep('cluster-a', { n: 1 }, same);
  memo.turn();
  assert.equal(memo.row('t', 'vd').keep('cluster-a', { n: 1 }, same), first);
  memo.turn();
  const other = { n: 2 };
  assert.equal(memo.row('t', 'vd').keep('cluster-a', other, same), other);
});

test('given an output resource, when the next run rebuilds it as new objects with equal content, then the previous object is returned; a changed one replaces it', () => {
  const memo = new RunMemo();
  const build = (port: number) => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'se', namespace: 'ns' },
    spec: { hosts: ['a.example'], ports: [{ number: port, name: 'http' }], endpoints: [{ address: '10.0.0.1' }] },
  });
  const first = memo.resource('slot', build(80));
  memo.turn();
  assert.equal(memo.resource('slot', build(80)), first, 'equal content: the same object');
  memo.turn();
  const changed = memo.resource('slot', build(81));
  assert.notEqual(changed, first);
  assert.deepEqual((changed.spec as { ports: { number: number }[] }).ports[0]?.number, 81);
});
