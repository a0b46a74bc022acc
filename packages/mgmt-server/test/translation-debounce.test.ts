// The translation debounce coalesces triggers; it must never starve translation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildInputSnapshot } from '@meshrelay/api';
import { buildEndpointSlice, buildService } from '@meshrelay/testkit';
import { translationSetup } from './translation-setup.ts';

test(
  'given a 300 ms debounce, when triggers keep coming every 50 ms, then a translation still runs while they do',
  { timeout: 60_000 },
  async (t) => {
    const { registry, store, outputs, loop } = await translationSetup(t, {
      keyPrefix: 'debounce',
      commandTimeoutMs: 5000,
      debounceMs: 300,
    });
    await registry.register('c0', {});
    const ports = [{ name: 'http', port: 8080 }];
    await store.putInput(
      buildInputSnapshot({
        cluster: 'c0',
        epoch: 'e',
        generation: 1,
        resources: [
          buildService({ name: 'svc', namespace: 'ns', ports }),
          buildEndpointSlice({ service: 'svc', namespace: 'ns', ports, endpoints: [{ ip: '10.0.0.1' }] }),
        ],
      }),
    );

    loop.start();
    const deadline = Date.now() + 5000;
    while (outputs.current('c0') === undefined && Date.now() < deadline) {
      loop.trigger('a steady stream of changes');
      await sleep(50);
    }

    assert.notEqual(outputs.current('c0'), undefined, 'no translation ran in 5 s of triggers 50 ms apart');
  },
);
