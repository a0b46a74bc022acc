/**
 * `node --expose-gc bench/pressure/run.ts [server flags…]`: what hostile or
 * careless peers cost a management server. Starts a server in a child process
 * and, one after the other, floods a snapshot with empty chunks, opens a Pull
 * stream that never reads while many outputs are published, and opens many TCP
 * connections that never start TLS. Prints the server's RSS growth and open
 * files after each. Figures, not a test: the limits themselves are tested in
 * packages/mgmt-server/test.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, credentials, type ClientDuplexStream } from '@grpc/grpc-js';
import { RELAY_SERVICE, type relay } from '@meshrelay/api';
import type { PressureIdentity } from './identity.ts';

interface Probe {
  readonly rss: number;
  readonly fds: number;
}
interface Ready {
  readonly port: number;
  readonly identity: PressureIdentity;
  readonly probe: Probe;
}

const MiB = 1024 * 1024;

function request<T>(
  child: ChildProcess,
  message: object,
  pick: (m: Record<string, unknown>) => T | undefined,
): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: Record<string, unknown>) => {
      const v = pick(m);
      if (v === undefined) return;
      child.off('message', on);
      resolve(v);
    };
    child.on('message', on);
    if (Object.keys(message).length > 0) child.send(message);
  });
}

const probe = (child: ChildProcess) => request(child, { probe: true }, (m) => m['probe'] as Probe | undefined);

async function startChild(): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(fileURLToPath(new URL('./server-child.ts', import.meta.url)), process.argv.slice(2), {
    execArgv: ['--expose-gc', '--conditions=source'],
  });
  const ready = await request(child, {}, (m) => (m['ready'] ? (m as unknown as Ready) : undefined));
  return { child, ready };
}

function mtls(ready: Ready): Client {
  const { identity } = ready;
  return new Client(
    `localhost:${ready.port}`,
    credentials.createSsl(Buffer.from(identity.caPem), Buffer.from(identity.keyPem), Buffer.from(identity.certPem)),
  );
}

async function chunkFlood(ready: Ready, seconds: number): Promise<string> {
  const client = mtls(ready);
  const m = RELAY_SERVICE.push;
  const push: ClientDuplexStream<relay.v1.IPushRequest, relay.v1.IPushResponse> = client.makeBidiStreamRequest(
    m.path,
    m.requestSerialize,
    m.responseDeserialize,
  );
  let outcome = 'still open';
  let ended = false;
  let settle!: () => void;
  const over = new Promise<void>((resolve) => (settle = resolve));
  push.on('data', (r: relay.v1.IPushResponse) => {
    if (r.ack) outcome = `ack accepted=${r.ack.accepted} ${r.ack.errorCode ?? ''} ${r.ack.message ?? ''}`;
  });
  push.on('error', (e: Error) => {
    outcome = `ended: ${e.message}`;
    ended = true;
    settle();
  });
  push.write({
    header: { epoch: 'e', generation: 1, hash: 'a'.repeat(64), totalChunks: 4_294_967_295, totalBytes: 1000 },
  });
  const until = Date.now() + seconds * 1000;
  // Keeps flooding after a refusal: the chunks of a refused snapshot are read and dropped.
  let index = 0;
  for (; Date.now() < until && !ended; index++) {
    if (!push.write({ chunk: { index, data: Buffer.alloc(0) } })) {
      let onDrain!: () => void;
      await Promise.race([new Promise<void>((r) => push.once('drain', (onDrain = r))), over, sleep(1000)]);
      push.off('drain', onDrain);
    }
  }
  push.cancel();
  client.close();
  return `${outcome} (${index} chunks sent)`;
}

async function idlePuller(child: ChildProcess, ready: Ready, count: number, bytes: number): Promise<void> {
  const client = mtls(ready);
  const m = RELAY_SERVICE.pull;
  const pull: ClientDuplexStream<relay.v1.IPullRequest, relay.v1.IPullResponse> = client.makeBidiStreamRequest(
    m.path,
    m.requestSerialize,
    m.responseDeserialize,
  );
  pull.on('error', () => undefined);
  pull.write({ hello: { heldHash: '' } });
  await sleep(500);
  await request(child, { outputs: { count, bytes } }, (msg) => msg['published'] as number | undefined);
  await sleep(3000);
  pull.cancel();
  client.close();
}

async function idleConnections(port: number, count: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i++) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    sockets.push(socket);
  }
  await sleep(2000);
  return sockets;
}

const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;
const { child, ready } = await startChild();
let before = await probe(child);
const outcome = await chunkFlood(ready, 20);
let after = await probe(child);
console.log(
  `chunk flood (20 s of empty chunks after a 2^32-1 chunk header): server RSS +${mib(after.rss - before.rss)}; stream: ${outcome}`,
);
before = await probe(child);
await idlePuller(child, ready, 200, MiB);
after = await probe(child);
console.log(`Pull that never reads, 200 outputs of 1 MiB published: server RSS +${mib(after.rss - before.rss)}`);
before = await probe(child);
const sockets = await idleConnections(ready.port, 1500);
after = await probe(child);
const open = () => sockets.filter((s) => !s.destroyed && s.readyState === 'open').length;
console.log(
  `1500 TCP connections from one address that never start TLS: server RSS +${mib(after.rss - before.rss)}, server fds ${before.fds} -> ${after.fds}, still open after 2 s: ${open()}`,
);
await sleep(13_000);
console.log(`  ... after 15 s: still open ${open()}, server fds ${(await probe(child)).fds}`);
for (const s of sockets) s.destroy();
child.disconnect();
