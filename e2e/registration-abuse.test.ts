// Registration under attack, against a real meshrelay-server process over gRPC with TLS:
// concurrent wrong tokens, wrong tokens from many addresses, a CSR built to stall a pure-JS
// verifier, an oversized cluster name.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client, credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, type relay } from '@meshrelay/api';
import { createCsr, generateKeyPair } from '@meshrelay/certs';
import { allOnes, csrWithPublicKey } from '@meshrelay/testkit';
import { Mesh, type ServerProc } from './mesh.ts';

// A liveness bound, not a speed target: a responsive server answers in milliseconds; one whose
// event loop is stuck in a big-number computation does not answer for tens of seconds.
const ANSWER_DEADLINE_MS = 20_000;

interface Registrar {
  register(request: relay.v1.IRegisterRequest): Promise<ServiceError | relay.v1.IRegisterResponse>;
}

function registrar(
  t: { after(fn: () => void): void },
  mesh: Mesh,
  server: ServerProc | number,
  cluster: string,
): Registrar {
  const ca = readFileSync(join(mesh.dir, 'credentials', cluster, 'relay-ca.pem'));
  const port = typeof server === 'number' ? server : server.relayPort;
  const client = new Client(`localhost:${port}`, credentials.createSsl(ca));
  t.after(() => client.close());
  return {
    register: (request) =>
      new Promise((resolve) => {
        const m = REGISTRATION_SERVICE.register;
        client.makeUnaryRequest(
          m.path,
          m.requestSerialize,
          m.responseDeserialize,
          request,
          new Metadata(),
          { deadline: Date.now() + ANSWER_DEADLINE_MS },
          (err: ServiceError | null, res?: relay.v1.IRegisterResponse) => resolve(err ?? res ?? {}),
        );
      }),
  };
}

function tokenOf(mesh: Mesh, cluster: string): string {
  return readFileSync(join(mesh.dir, 'credentials', cluster, 'token'), 'utf8');
}

function codeOf(answer: ServiceError | relay.v1.IRegisterResponse): string {
  return 'code' in answer
    ? `${status[answer.code]} ${/MESHRELAY_ERR_[A-Z_]+/.exec(answer.details)?.[0] ?? ''}`.trim()
    : 'OK';
}

/**
 * A TCP relay on 127.0.0.1 whose connections to the server leave from `localAddress`. Linux routes
 * all of 127.0.0.0/8 to the loopback interface, so the server sees each relay as its own source
 * address (grpc-js clients cannot choose theirs); TLS and gRPC pass through untouched.
 */
async function fromAddress(
  t: { after(fn: () => Promise<void>): void },
  server: ServerProc,
  localAddress: string,
): Promise<number> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): Socket => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    return socket;
  };
  const relay = createServer((inbound) => {
    const outbound = track(connect({ host: '127.0.0.1', port: server.relayPort, localAddress }));
    track(inbound);
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        relay.close(() => resolve());
      }),
  );
  return (relay.address() as AddressInfo).port;
}

async function startOne(t: Parameters<typeof Mesh.start>[0]): Promise<{ mesh: Mesh; server: ServerProc }> {
  const mesh = await Mesh.start(t, { redis: false });
  const server = await mesh.startServer('mgmt-0', ['--registration-max-failures', '5']);
  await mesh.register('east');
  return { mesh, server };
}

test('given a limit of 5 failures, when 60 wrong tokens arrive at once, then at most 5 reach token verification and the rest are RESOURCE_EXHAUSTED', async (t) => {
  const { mesh, server } = await startOne(t);
  const keys = generateKeyPair();
  const csrPem = createCsr({ ...keys, cluster: 'east' });
  const client = registrar(t, mesh, server, 'east');
  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, i) => client.register({ cluster: 'east', token: `mrt_wrong-${i}`, csrPem })),
  );
  const counts = new Map<string, number>();
  for (const a of answers) counts.set(codeOf(a), (counts.get(codeOf(a)) ?? 0) + 1);
  const verified = counts.get('UNAUTHENTICATED MESHRELAY_ERR_TOKEN_INVALID') ?? 0;
  assert.ok(verified <= 5, `${verified} of 60 wrong tokens reached verification: ${JSON.stringify([...counts])}`);
  assert.equal(counts.get('RESOURCE_EXHAUSTED MESHRELAY_ERR_RATE_LIMITED'), 60 - verified, JSON.stringify([...counts]));
});

test('given a valid token, when the CSR carries a huge RSA exponent and modulus, then it is refused for its key while another call is answered', async (t) => {
  const { mesh, server } = await startOne(t);
  await mesh.register('west');
  const client = registrar(t, mesh, server, 'east');
  const hostile = csrWithPublicKey('east', allOnes(16_384), allOnes(4096));
  const attack = client.register({ cluster: 'east', token: tokenOf(mesh, 'east'), csrPem: hostile });
  const other = client.register({
    cluster: 'west',
    token: 'mrt_not-the-token',
    csrPem: createCsr({ ...generateKeyPair(), cluster: 'west' }),
  });
  const [refused, answered] = await Promise.all([attack, other]);
  assert.equal(codeOf(refused), 'INVALID_ARGUMENT MESHRELAY_ERR_CERTIFICATE');
  assert.match((refused as ServiceError).details, /exponent is not 65537/);
  assert.equal(codeOf(answered), 'UNAUTHENTICATED MESHRELAY_ERR_TOKEN_INVALID');
});

test('given a 300-byte cluster name, when it registers, then INVALID_ARGUMENT and the name appears in neither the answer nor the log', async (t) => {
  const { mesh, server } = await startOne(t);
  const name = `x${'evil'.repeat(75)}`;
  const answer = await registrar(t, mesh, server, 'east').register({ cluster: name, token: 'mrt_x', csrPem: 'x' });
  assert.equal(codeOf(answer), 'INVALID_ARGUMENT MESHRELAY_ERR_INVALID_ARGUMENT');
  assert.doesNotMatch((answer as ServiceError).details, /evilevil/);
  // The answer can overtake the log line on its way through the child's stdout.
  await server.proc.waitForLine((l) => l.includes('registration refused'), 10_000);
  assert.ok(!server.proc.lines.some((l) => l.includes('evilevil')), 'the name is not logged');
});

test("given five wrong tokens for east from five networks, when east's agent registers from a sixth with its token, then it gets its certificate", async (t) => {
  const { mesh, server } = await startOne(t);
  const csrPem = createCsr({ ...generateKeyPair(), cluster: 'east' });
  const guesses = [];
  for (let n = 1; n <= 5; n++) {
    const port = await fromAddress(t, server, `127.${n}.0.1`);
    guesses.push(await registrar(t, mesh, port, 'east').register({ cluster: 'east', token: `mrt_guess-${n}`, csrPem }));
  }

  const agent = await registrar(t, mesh, await fromAddress(t, server, '127.0.0.1'), 'east').register({
    cluster: 'east',
    token: tokenOf(mesh, 'east'),
    csrPem,
  });

  assert.deepEqual(guesses.map(codeOf), Array<string>(5).fill('UNAUTHENTICATED MESHRELAY_ERR_TOKEN_INVALID'));
  assert.equal(codeOf(agent), 'OK');
  assert.match((agent as relay.v1.IRegisterResponse).certificatePem ?? '', /BEGIN CERTIFICATE/);
});

test("given one /24 whose addresses each sent one wrong token until the network's limit, when one more of its addresses and another network register, then the first waits and the second is answered", async (t) => {
  const { mesh, server } = await startOne(t);
  const csrPem = createCsr({ ...generateKeyPair(), cluster: 'east' });
  // Five failures per address (--registration-max-failures) and four times that per network.
  const rotated = [];
  for (let host = 1; host <= 20; host++) {
    const port = await fromAddress(t, server, `127.9.9.${host}`);
    rotated.push(
      codeOf(await registrar(t, mesh, port, 'east').register({ cluster: 'east', token: `mrt_guess-${host}`, csrPem })),
    );
  }

  const next = await registrar(t, mesh, await fromAddress(t, server, '127.9.9.21'), 'east').register({
    cluster: 'east',
    token: tokenOf(mesh, 'east'),
    csrPem,
  });
  const other = await registrar(t, mesh, await fromAddress(t, server, '127.9.10.1'), 'east').register({
    cluster: 'east',
    token: tokenOf(mesh, 'east'),
    csrPem,
  });

  assert.deepEqual(rotated, Array<string>(20).fill('UNAUTHENTICATED MESHRELAY_ERR_TOKEN_INVALID'));
  assert.equal(codeOf(next), 'RESOURCE_EXHAUSTED MESHRELAY_ERR_RATE_LIMITED');
  assert.equal(codeOf(other), 'OK');
});
