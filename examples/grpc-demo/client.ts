/**
 * A proxyless gRPC client in cluster-a: @grpc/grpc-js-xds reads its routes and endpoints from
 * cluster-a's agent (the xDS server at localhost:<xds-port>), and every second it calls the
 * greeter through the VirtualDestination greeter.global, which both clusters back. Each answer
 * says which cluster took the call; the line goes to stdout and to <log file>.
 * Usage: client.ts <xds-port> <log file> [interval ms, default 1000]
 */
import { appendFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { GREETER_TARGET, HELLO_PATH, type Greeting } from './greeter.ts';

const [portText, logFile, intervalText] = process.argv.slice(2);
const xdsPort = Number(portText);
const intervalMs = Number(intervalText ?? 1000);
if (!Number.isInteger(xdsPort) || xdsPort <= 0 || logFile === undefined || !(intervalMs > 0)) {
  process.stderr.write('usage: client.ts <xds-port> <log file> [interval ms]\n');
  process.exit(2);
}

// The bootstrap a workload in cluster-a gets: its agent's xDS server and its Node's locality
// (node-a1 in examples/cluster-a/nodes.yaml), which orders endpoints by nearness.
process.env['GRPC_XDS_BOOTSTRAP_CONFIG'] = JSON.stringify({
  xds_servers: [
    { server_uri: `localhost:${xdsPort}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
  ],
  node: {
    id: 'sidecar~127.0.0.1~greeter-client.greeter~greeter.svc.cluster.local',
    locality: { region: 'us-east', zone: 'us-east-1a' },
  },
});
xds.register();

const client = new grpc.Client(GREETER_TARGET, grpc.credentials.createInsecure());
const encode = (): Buffer => Buffer.from('{}');
const decode = (bytes: Buffer): Greeting => JSON.parse(bytes.toString('utf8')) as Greeting;
const tally: Record<string, number> = {};

function hello(): Promise<Greeting> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      HELLO_PATH,
      encode,
      decode,
      {},
      new grpc.Metadata(),
      { deadline: Date.now() + intervalMs * 2 },
      (err, res) => (err || !res ? reject(err ?? new Error('empty answer')) : resolve(res)),
    );
  });
}

function report(line: string): void {
  process.stdout.write(`${line}\n`);
  appendFileSync(logFile as string, `${new Date().toISOString()} ${line}\n`);
}

let calls = 0;
async function callOnce(): Promise<void> {
  // Numbered when made: a call still waiting for the config may finish after the next one.
  const n = (calls += 1);
  try {
    const answer = await hello();
    tally[answer.cluster] = (tally[answer.cluster] ?? 0) + 1;
    const sofar = Object.entries(tally)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([c, n]) => `${c} ${n}`)
      .join(', ');
    report(`call ${n}: ${answer.cluster} answered (${answer.address}); so far ${sofar}`);
  } catch (err) {
    // Before the agent has served the config (or while no endpoint answers) calls fail; the next one retries.
    const e = err as grpc.ServiceError;
    report(`call ${n}: failed ${grpc.status[e.code] ?? 'ERROR'}: ${e.details ?? e.message}`);
  }
}

const timer = setInterval(() => void callOnce(), intervalMs);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    clearInterval(timer);
    client.close();
    process.exit(0);
  });
}
