import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { SnapshotStore } from '../src/index.ts';
import { inputOf, outputOf } from './fixtures.ts';

/** Builds a fresh, empty store for one test and closes it (and whatever it needs) in t.after. */
export type StoreFactory = (t: TestContext) => Promise<SnapshotStore>;

/** The behaviour every SnapshotStore shares, as one replica sees it. */
export function runSnapshotStoreContract(name: string, makeStore: StoreFactory): void {
  test(`${name}: given an empty store, when an unknown cluster is read, then there is no input or output`, async (t) => {
    const store = await makeStore(t);
    assert.equal(await store.getInput('nowhere'), undefined);
    assert.equal(await store.getOutput('nowhere'), undefined);
    assert.equal(store.memoryInputs().size, 0);
  });

  test(`${name}: given a put input, when read back, then the same snapshot is returned`, async (t) => {
    const store = await makeStore(t);
    const snapshot = inputOf('east', { generation: 4 });
    await store.putInput(snapshot);
    const read = await store.getInput('east');
    assert.equal(read?.hash, snapshot.hash);
    assert.equal(read?.generation, 4);
    assert.deepEqual(read?.resources, snapshot.resources);
  });

  test(`${name}: given an input, when a newer one is put, then it replaces the old one`, async (t) => {
    const store = await makeStore(t);
    await store.putInput(inputOf('east', { generation: 1, services: ['a'] }));
    const newer = inputOf('east', { generation: 2, services: ['a', 'b'] });
    await store.putInput(newer);
    assert.equal((await store.getInput('east'))?.hash, newer.hash);
  });

  test(`${name}: given inputs of two clusters, when memoryInputs is changed by the caller, then the store is not`, async (t) => {
    const store = await makeStore(t);
    await store.putInput(inputOf('east'));
    await store.putInput(inputOf('west'));
    const held = store.memoryInputs() as Map<string, unknown>;
    assert.deepEqual([...held.keys()].sort(), ['east', 'west']);
    held.clear();
    assert.equal(store.memoryInputs().size, 2);
  });

  test(`${name}: given some inputs, when loadInputs asks for known and unknown names, then only the known are returned`, async (t) => {
    const store = await makeStore(t);
    await store.putInput(inputOf('east'));
    await store.putInput(inputOf('west'));
    const loaded = await store.loadInputs(['east', 'nowhere', 'west']);
    assert.deepEqual([...loaded.keys()].sort(), ['east', 'west']);
  });

  test(`${name}: given an input, when it is deleted, then it is gone`, async (t) => {
    const store = await makeStore(t);
    await store.putInput(inputOf('east'));
    await store.deleteInput('east');
    assert.equal(await store.getInput('east'), undefined);
    assert.equal(store.memoryInputs().has('east'), false);
  });

  test(`${name}: given a put output, when read back, then resources and provenance are returned`, async (t) => {
    const store = await makeStore(t);
    const output = outputOf('east', [inputOf('east'), inputOf('west')]);
    await store.putOutput(output);
    const read = await store.getOutput('east');
    assert.equal(read?.hash, output.hash);
    assert.deepEqual(read?.provenance, output.provenance);
  });

  test(`${name}: given an output, when it is deleted, then it is gone`, async (t) => {
    const store = await makeStore(t);
    await store.putOutput(outputOf('east', [inputOf('east')]));
    await store.deleteOutput('east');
    assert.equal(await store.getOutput('east'), undefined);
  });

  test(`${name}: given a listener, when this store puts inputs, then the listener is not called`, async (t) => {
    const store = await makeStore(t);
    const events: unknown[] = [];
    store.onInputChanged((event) => events.push(event));
    await store.putInput(inputOf('east'));
    await store.deleteInput('east');
    assert.deepEqual(events, []);
  });

  test(`${name}: given a healthy store, when changes are made, then nothing is left pending`, async (t) => {
    const store = await makeStore(t);
    await store.putInput(inputOf('east'));
    await store.putOutput(outputOf('east', [inputOf('east')]));
    assert.equal(store.health().pendingWriteBack, 0);
  });

  test(`${name}: given a closed store, when memory is read, then what it held is still there`, async (t) => {
    const store = await makeStore(t);
    const snapshot = inputOf('east');
    await store.putInput(snapshot);
    await store.close();
    assert.equal((await store.getInput('east'))?.hash, snapshot.hash);
    await store.close();
  });
}
