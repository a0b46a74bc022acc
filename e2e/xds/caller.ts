/**
 * A real proxyless gRPC client process that serves many runs of calls, so a test does not start
 * (and load grpc-js-xds into) a process for each. One JSON command per stdin line:
 * `{ id, target, calls, headers, deadlineMs, bootstrap }`; for each it opens a new channel with its
 * own xDS client (grpc-js-xds's per-channel bootstrap option, so a fresh ADS subscription, as a
 * new process would have) and its own subchannels, makes `calls` sequential calls, closes the
 * channel, and prints `result {"id":…,"picks":{counts,errors}}`. Ends when stdin closes.
 */
import { createInterface } from 'node:readline';
import * as grpc from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { ask, metadataOf, tally, type Picks } from './calls.ts';

/** grpc-js-xds reads a channel's bootstrap from this option (it then gets an xDS client of its own). */
const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';

interface Command {
  readonly id: number;
  readonly target: string;
  readonly calls: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly deadlineMs: number;
  readonly bootstrap: string;
}

xds.register();

async function run(command: Command): Promise<Picks> {
  const client = new grpc.Client(command.target, grpc.credentials.createInsecure(), {
    [BOOTSTRAP_OPTION]: command.bootstrap,
    'grpc.use_local_subchannel_pool': 1,
  });
  const picks = { counts: {}, errors: {} };
  const metadata = metadataOf(command.headers);
  try {
    // Sequential calls: each pick is the balancer's, not an artefact of concurrency.
    for (let i = 0; i < command.calls; i++) tally(picks, await ask(client, metadata, command.deadlineMs));
  } finally {
    client.close();
  }
  return picks;
}

const pending = new Set<Promise<void>>();
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as Command;
  const done = run(command).then(
    (picks) => console.log(`result ${JSON.stringify({ id: command.id, picks })}`),
    (err: unknown) => console.log(`result ${JSON.stringify({ id: command.id, error: String(err) })}`),
  );
  pending.add(done);
  void done.finally(() => pending.delete(done));
}
await Promise.all(pending);
process.exit(0);
