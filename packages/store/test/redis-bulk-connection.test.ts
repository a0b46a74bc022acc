import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { inputOf, outputOf } from './fixtures.ts';
import { plainClientFor, readyRedisStoreFor, redisServerFor } from './redis-harness.ts';

/** The name Redis knows each connected client by, keyed by its address (CLIENT LIST). */
async function clientNames(list: string): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const line of list.split('\n')) {
    const fields = new Map(
      line
        .trim()
        .split(' ')
        .map((kv) => kv.split('=') as [string, string]),
    );
    const addr = fields.get('addr');
    if (addr) names.set(addr, fields.get('name') ?? '');
  }
  return names;
}

test(
  'given a store, when it writes an input and an output, then the output travels on its own bulk connection and the input on the command connection',
  { timeout: 30_000 },
  async (t) => {
    const server = await redisServerFor(t);
    const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
    const plain = plainClientFor(t, server.url);
    const monitor = await plainClientFor(t, server.url).monitor();
    t.after(() => monitor.disconnect());
    const sources: { key: string; source: string }[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      // Commands a script runs show as coming from "lua"; the script itself came from the client.
      const key = args.find((a) => a.includes(':input-parts:') || a.includes(':output-parts:'));
      if (key && source !== 'lua') sources.push({ key, source });
    });

    const input = inputOf('east');
    await store.putInput(input);
    await store.putOutput(outputOf('east', [input]));
    await waitFor(
      () =>
        sources.some((s) => s.key.includes(':output-parts:')) && sources.some((s) => s.key.includes(':input-parts:')),
      { timeoutMs: 5000, message: 'MONITOR saw both writes' },
    );

    const names = await clientNames(String(await plain.call('CLIENT', 'LIST')));
    const namesOf = (part: string) =>
      new Set(sources.filter((s) => s.key.includes(part)).map((s) => names.get(s.source)));
    assert.deepEqual([...namesOf(':output-parts:')], ['meshrelay-store-a-bulk']);
    assert.deepEqual([...namesOf(':input-parts:')], ['meshrelay-store-a']);
  },
);

test(
  'given a store whose bulk connection was killed, when it reconnects, then the store reports Redis up again and an output put meanwhile reaches Redis',
  { timeout: 30_000 },
  async (t) => {
    const server = await redisServerFor(t);
    const { store } = await readyRedisStoreFor(t, { url: server.url, replicaId: 'a', keyPrefix: 'mr' });
    const plain = plainClientFor(t, server.url);
    const healths: boolean[] = [];
    store.onHealthChange((h) => healths.push(h.redisUp));

    const names = await clientNames(String(await plain.call('CLIENT', 'LIST')));
    const bulk = [...names].find(([, name]) => name === 'meshrelay-store-a-bulk')?.[0];
    assert.ok(bulk, 'the bulk connection is listed');
    await plain.call('CLIENT', 'KILL', 'ADDR', bulk);
    await waitFor(() => healths.includes(false), {
      timeoutMs: 5000,
      message: 'the store noticed its bulk connection dropped',
    });
    const input = inputOf('east');
    const output = outputOf('east', [input]);
    await store.putOutput(output);

    await waitFor(() => store.health().redisUp && store.health().pendingWriteBack === 0, {
      timeoutMs: 10_000,
      message: 'the bulk connection came back and nothing is pending',
    });
    await waitFor(async () => (await plain.hget('mr:output-parts:east', '#hash')) === output.hash, {
      timeoutMs: 5000,
      message: 'Redis holds the output',
    });
  },
);
