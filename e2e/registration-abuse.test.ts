// Registration under attack, against a real meshrelay-server process over gRPC with TLS:
// concurrent wrong tokens, a CSR built to stall a pure-JS verifier, an oversized cluster name.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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

function registrar(t: { after(fn: () => void): void }, mesh: Mesh, server: ServerProc, cluster: string): Registrar {
  const ca = readFileSync(join(mesh.dir, 'credentials', cluster, 'relay-ca.pem'));
  const client = new Client(`localhost:${server.relayPort}`, credentials.createSsl(ca));
  t.after(() => client.close());
  return {
    register: (request) => new Promise((resolve) => {
      const m = REGISTRATION_SERVICE.register;
      client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, request, new Metadata(),
        { deadline: Date.now() + ANSWER_DEADLINE_MS },
        (err: ServiceError | null, res?: relay.v1.IRegisterResponse) => resolve(err ?? res ?? {}));
    }),
  };
}

function tokenOf(mesh: Mesh, cluster: string): string {
  return readFileSync(join(mesh.dir, 'credentials', cluster, 'token'), 'utf8');
}

function codeOf(answer: ServiceError | relay.v1.IRegisterResponse): string {
  return 'code' in answer ? `${status[answer.code]} ${/MESHRELAY_ERR_[A-Z_]+/.exec(answer.details)?.[0] ?? ''}`.trim() : 'OK';
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
  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => client.register({ cluster: 'east', token: `mrt_wrong-${i}`, csrPem })));
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
  const other = client.register({ cluster: 'west', token: 'mrt_not-the-token', csrPem: createCsr({ ...generateKeyPair(), cluster: 'west' }) });
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
