// DESIGN §13's kept contributions are written behind delivery: an agent never waits for them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot } from '@meshrelay/api';
import { pino } from 'pino';
import { DirectoryDocumentStore } from '@meshrelay/registry';
import { buildEndpointSlice, buildService, waitFor } from '@meshrelay/testkit';
import { CarriedContributions } from '../src/carried-contributions.ts';
import { HeldDocuments } from './held-documents.ts';
import { translationSetup } from './translation-setup.ts';

test(
  'given the kept-contribution write is slow, when an input changes, then its output is published before that write completes',
  { timeout: 60_000 },
  async (t) => {
    let documents: HeldDocuments | undefined;
    const { registry, store, outputs, loop } = await translationSetup(t, {
      keyPrefix: 'contribution-order',
      commandTimeoutMs: 5000,
      contributionDocuments: (dir) => (documents = new HeldDocuments(dir)),
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

    const held = documents as HeldDocuments;
    loop.start();
    // Released on failure too, so the loop (stopped in t.after) is not left waiting on the write.
    await waitFor(() => outputs.current('c0') !== undefined, {
      timeoutMs: 10_000,
      message: 'the output was not published while the contribution write was held',
    }).finally(() => setTimeout(() => held.release(), 0));

    await waitFor(() => held.started.includes('c0'), {
      timeoutMs: 5000,
      message: 'the contribution was never written',
    });
    await loop.stop();
    assert.notEqual(await held.get('c0'), undefined);
  },
);

test(
  'given the kept-contribution write of one run is held, when the input changes again, then the next run publishes its output without waiting for that write',
  { timeout: 60_000 },
  async (t) => {
    let documents: HeldDocuments | undefined;
    const { registry, store, loop } = await translationSetup(t, {
      keyPrefix: 'contribution-next-run',
      commandTimeoutMs: 5000,
      contributionDocuments: (dir) => (documents = new HeldDocuments(dir)),
    });
    await registry.register('c0', {});
    const ports = [{ name: 'http', port: 8080 }];
    const inputWith = (generation: number, ip: string) =>
      buildInputSnapshot({
        cluster: 'c0',
        epoch: 'e',
        generation,
        resources: [
          buildService({ name: 'svc', namespace: 'ns', ports }),
          buildEndpointSlice({ service: 'svc', namespace: 'ns', ports, endpoints: [{ ip }] }),
        ],
      });
    await store.putInput(inputWith(1, '10.0.0.1'));
    const held = documents as HeldDocuments;
    const second = inputWith(2, '10.0.0.2');
    const admittedHash = () => loop.status().admitted.find((a) => a.cluster === 'c0')?.inputHash;
    loop.start();
    try {
      await waitFor(() => admittedHash() !== undefined && held.started.includes('c0'), {
        timeoutMs: 10_000,
        message: 'the first run never translated, or its contribution write never started',
      });
      await store.putInput(second);
      loop.trigger('test: the input changed');
      await waitFor(() => admittedHash() === second.hash, {
        timeoutMs: 10_000,
        message: 'the second run waited for the held contribution write',
      });
      assert.deepEqual(held.started, ['c0'], 'the first write is still held');
    } finally {
      // Released here, not in t.after: the loop (stopped in t.after) waits for the writes it queued.
      held.release();
    }
    await loop.stop();
    const kept = JSON.parse(String(await held.get('c0'))) as { generation: number; hash: string };
    assert.equal(kept.hash, second.hash, 'once released, the latest input is the one kept');
    assert.deepEqual(held.started, ['c0', 'c0'], 'the first input, then only the latest');
  },
);

/** The real directory store whose first read of one record waits until the test lets it through. */
class HeldRead extends DirectoryDocumentStore {
  readonly #name: string;
  #reading: (() => void) | undefined;
  readonly reading = new Promise<void>((resolve) => (this.#reading = resolve));
  #release!: () => void;
  readonly #gate = new Promise<void>((resolve) => (this.#release = resolve));

  constructor(dir: string, name: string) {
    super(dir);
    this.#name = name;
  }

  override async get(name: string): Promise<Buffer | undefined> {
    if (name === this.#name && this.#reading) {
      this.#reading();
      this.#reading = undefined;
      await this.#gate;
    }
    return super.get(name);
  }

  release(): void {
    this.#release();
  }
}

test(
  'given an absent cluster whose input and kept record arrive while a run reads that record, then no output names its current input stale',
  { timeout: 60_000 },
  async (t) => {
    let documents: HeldRead | undefined;
    let dir = '';
    const { registry, store, outputs, loop } = await translationSetup(t, {
      keyPrefix: 'contribution-arrived',
      commandTimeoutMs: 5000,
      contributionDocuments: (d) => {
        dir = d;
        return (documents = new HeldRead(d, 'c1'));
      },
    });
    await registry.register('c0', {});
    await registry.register('c1', {});
    const ports = [{ name: 'http', port: 8080 }];
    const inputOf = (cluster: string, ip: string) =>
      buildInputSnapshot({
        cluster,
        epoch: 'e',
        generation: 1,
        resources: [
          buildService({ name: `svc-${cluster}`, namespace: 'ns', ports }),
          buildEndpointSlice({ service: `svc-${cluster}`, namespace: 'ns', ports, endpoints: [{ ip }] }),
        ],
      });
    await store.putInput(inputOf('c0', '10.0.0.1'));
    const held = documents as HeldRead;
    loop.start();
    try {
      // The run loaded the inputs without c1 and now reads c1's kept record; meanwhile c1's input
      // arrives and another replica keeps its record, as it does once it translated with it.
      await held.reading;
      const c1 = inputOf('c1', '10.0.0.2');
      await store.putInput(c1);
      const other = new CarriedContributions(new DirectoryDocumentStore(dir), pino({ level: 'silent' }));
      await other.remember([c1]);
    } finally {
      held.release();
    }
    await waitFor(() => outputs.current('c0')?.provenance.length === 2, {
      timeoutMs: 10_000,
      message: 'no output was built from both clusters',
    });
    await loop.stop();
    const provenance = outputs.current('c0')?.provenance ?? [];
    assert.deepEqual(
      provenance.map((p) => [p.cluster, p.stale === true]),
      [
        ['c0', false],
        ['c1', false],
      ],
      'c1 was present when its record was read',
    );
    assert.equal(
      loop.status().admitted.find((a) => a.cluster === 'c1')?.inputHash,
      (await store.loadInputs(['c1'])).get('c1')?.hash,
    );
  },
);
