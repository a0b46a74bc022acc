/**
 * A real proxyless gRPC client process: reads its bootstrap from GRPC_XDS_BOOTSTRAP_CONFIG,
 * registers grpc-js-xds, makes `calls` calls to `target` (e.g. xds:///reviews.bookinfo.svc.cluster.local:9080)
 * and prints one JSON line: answers counted per backend identity, failures per gRPC status code.
 * With `forever` instead of a count it keeps calling on the same channel (so on the xDS config it
 * holds) until stopped, printing the running totals as a `picks {...}` line every 250 ms.
 * With CLIENT_XDS_CREDENTIALS=1 it uses XdsChannelCredentials (mTLS when the Cluster carries a TLS context).
 * Usage: client.ts <target> <calls|forever> [header=value ...]
 */
import * as grpc from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { ask as askWith, metadataOf, tally } from './calls.ts';

const [target, callsText, ...headerArgs] = process.argv.slice(2);
const forever = callsText === 'forever';
const calls = forever ? Number.POSITIVE_INFINITY : Number(callsText);
if (!target || !(forever || (Number.isInteger(calls) && calls > 0))) {
  console.error('usage: client.ts <xds:///host:port> <calls|forever> [header=value ...]');
  process.exit(2);
}
xds.register();
// Each call's own deadline (CLIENT_DEADLINE_MS), so a delay longer than it shows as DEADLINE_EXCEEDED.
const DEADLINE_MS = Number(process.env['CLIENT_DEADLINE_MS'] ?? 10_000);

const metadata = metadataOf(
  Object.fromEntries(headerArgs.map((arg) => [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)])),
);

// CLIENT_XDS_CREDENTIALS=1: the TLS the Cluster asks for, with the bootstrap's certificate providers.
const credentials =
  process.env['CLIENT_XDS_CREDENTIALS'] === '1'
    ? new xds.XdsChannelCredentials(grpc.credentials.createInsecure())
    : grpc.credentials.createInsecure();
// CLIENT_RECONNECT_EVERY=N: a new channel (and connection, so a new TLS handshake with the
// certificates on disk now) every N calls; by default one channel for the whole run.
const RECONNECT_EVERY = Number(process.env['CLIENT_RECONNECT_EVERY'] ?? 0);
const newClient = (): grpc.Client =>
  new grpc.Client(target, credentials, RECONNECT_EVERY > 0 ? { 'grpc.use_local_subchannel_pool': 1 } : {});
let client = newClient();
// CLIENT_PACE_MS: the pause between calls of a long-running client (default 10 ms).
const PACE_MS = Number(process.env['CLIENT_PACE_MS'] ?? 10);
const ask = () => askWith(client, metadata, DEADLINE_MS);

const counts: Record<string, number> = {};
const errors: Record<string, number> = {};
if (forever) setInterval(() => console.log(`picks ${JSON.stringify({ counts, errors })}`), 250);
// Sequential calls: each pick is the balancer's, not an artefact of concurrency.
for (let i = 0; i < calls; i++) {
  tally({ counts, errors }, await ask());
  // A long-running client paces itself: a failing call returns at once and must not spin a core.
  if (forever) await new Promise((resolve) => setTimeout(resolve, PACE_MS));
  if (RECONNECT_EVERY > 0 && (i + 1) % RECONNECT_EVERY === 0) {
    client.close();
    client = newClient();
  }
}
console.log(JSON.stringify({ counts, errors }));
client.close();
process.exit(0);
