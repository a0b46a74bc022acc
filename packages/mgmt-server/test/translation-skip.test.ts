// A run whose inputs are all what the last run translated gives the last result again: it is skipped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot } from '@meshrelay/api';
import { buildEndpointSlice, buildService } from '@meshrelay/testkit';
import { translationSetup } from './translation-setup.ts';

const ports = [{ name: 'http', port: 8080 }];
const input = (generation: number, ip: string) =>
  buildInputSnapshot({
    cluster: 'c0',
    epoch: 'e',
    generation,
    resources: [
      buildService({ name: 'svc', namespace: 'ns', ports }),
      buildEndpointSlice({ service: 'svc', namespace: 'ns', ports, endpoints: [{ ip }] }),
    ],
  });

test(
  'given a loop that translated, when it is triggered with nothing changed, then it does not translate again; a new input or a changed cluster setting does',
  { timeout: 60_000 },
  async (t) => {
    const { registry, store, outputs, metrics, loop } = await translationSetup(t, {
      keyPrefix: 'skip',
      commandTimeoutMs: 5000,
    });
    const translations = async () =>
      (await metrics.translationDuration.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
    await registry.register('c0', {});
    await store.putInput(input(1, '10.0.0.1'));
    await loop.runNow();
    const first = { runs: await translations(), at: loop.status().lastRunAt, output: outputs.current('c0') };
    assert.equal(first.runs, 1);

    // The agent's ClusterWarm condition and a trigger with the same inputs: nothing translation reads.
    await registry.setCondition('c0', {
      type: 'ClusterWarm',
      status: 'True',
      reason: 'FirstSnapshotReceived',
      message: 'an input snapshot was received',
    });
    await loop.runNow();
    assert.equal(await translations(), 1);
    assert.equal(loop.status().lastRunAt, first.at);
    assert.equal(outputs.current('c0'), first.output);

    await store.putInput(input(2, '10.0.0.2'));
    await loop.runNow();
    assert.equal(await translations(), 2, 'a new input is translated');
    assert.notEqual(loop.status().lastRunAt, first.at);
    assert.deepEqual(loop.status().admitted, [{ cluster: 'c0', inputHash: input(2, '10.0.0.2').hash }]);

    await registry.update('c0', { trustDomain: 'c0.example' });
    await loop.runNow();
    assert.equal(await translations(), 3, 'a changed trust domain is translated');
  },
);
