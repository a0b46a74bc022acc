import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import tls from 'node:tls';
import {
  createCsr,
  createRootCa,
  DEFAULT_SERVER_HOSTS,
  generateKeyPair,
  issueServerCertificate,
  signClientCsr,
  verifyClientCertificate,
  type CaBundle,
} from '../src/index.ts';

// Real handshakes check real validity windows, so these certificates use the real clock.
const now = new Date();
const HOUR = 3600;
const ca = createRootCa({ commonName: 'meshrelay-root', now });
const server = issueServerCertificate(ca, { hosts: [...DEFAULT_SERVER_HOSTS], lifetimeSeconds: HOUR, now });

function clientCertificate(issuer: CaBundle, cluster: string): { key: string; cert: string } {
  const keys = generateKeyPair();
  const csr = createCsr({ ...keys, cluster });
  const issued = signClientCsr(issuer, csr, {
    cluster,
    trustDomain: 'meshrelay.local',
    uid: 'uid-1',
    lifetimeSeconds: HOUR,
    now,
  });
  return { key: keys.privateKeyPem, cert: issued.certPem };
}

/** Starts a TLS server on an ephemeral port that answers each connection with `reply(socket)` and closes it. */
interface RunningServer {
  readonly port: number;
  /** Handshakes the server refused. */
  readonly clientErrors: Error[];
  /** Connections that reached the application (an authorised handshake). */
  readonly accepted: { count: number };
}

async function startServer(
  t: TestContext,
  options: tls.TlsOptions,
  reply: (socket: tls.TLSSocket) => string,
): Promise<RunningServer> {
  const clientErrors: Error[] = [];
  const accepted = { count: 0 };
  const srv = tls.createServer({ cert: server.certPem, key: server.keyPem, ...options }, (socket) => {
    accepted.count += 1;
    socket.end(reply(socket));
  });
  srv.on('tlsClientError', (err) => clientErrors.push(err));
  srv.listen(0);
  await once(srv, 'listening');
  t.after(() => srv.close());
  return { port: (srv.address() as AddressInfo).port, clientErrors, accepted };
}

/** Connects, reads until the server closes, and resolves with what it said (or rejects with the TLS error). */
async function exchange(t: TestContext, options: tls.ConnectionOptions): Promise<string> {
  const socket = tls.connect(options);
  t.after(() => socket.destroy());
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    received += chunk;
  });
  await once(socket, 'end');
  return received;
}

test('given the relay server certificate, when a client that trusts the CA connects to localhost, then the handshake succeeds', async (t) => {
  const { port } = await startServer(t, {}, (socket) => `hello ${socket.getProtocol() ?? ''}`);
  const reply = await exchange(t, { host: 'localhost', port, ca: ca.certPem });
  assert.match(reply, /^hello TLSv1\.[23]$/);
});

test('given the relay server certificate, when a client connects by IP 127.0.0.1, then the IP SAN satisfies host checking', async (t) => {
  const { port } = await startServer(t, {}, () => 'ok');
  assert.equal(await exchange(t, { host: '127.0.0.1', port, ca: ca.certPem }), 'ok');
});

test('given a client that trusts another CA, when it connects, then it rejects the server certificate', async (t) => {
  const { port } = await startServer(t, {}, () => 'should not be read');
  const otherCa = createRootCa({ commonName: 'other-root', now });
  await assert.rejects(
    exchange(t, { host: 'localhost', port, ca: otherCa.certPem }),
    /self-signed|unable to verify|unable to get/i,
  );
});

test('given an mTLS server, when an agent presents its relay client certificate, then the server reads its cluster identity from the peer DER', async (t) => {
  const { port } = await startServer(t, { requestCert: true, rejectUnauthorized: true, ca: ca.certPem }, (socket) => {
    const identity = verifyClientCertificate(socket.getPeerCertificate().raw, ca, new Date());
    return `${identity.cluster} ${identity.spiffeId}`;
  });
  const reply = await exchange(t, { host: 'localhost', port, ca: ca.certPem, ...clientCertificate(ca, 'east') });
  assert.equal(reply, 'east spiffe://meshrelay.local/cluster/east');
});

test('given an mTLS server, when an agent presents a certificate from a foreign CA, then the handshake is refused', async (t) => {
  const { port, clientErrors, accepted } = await startServer(
    t,
    { requestCert: true, rejectUnauthorized: true, ca: ca.certPem },
    () => 'should not be read',
  );
  const foreignCa = createRootCa({ commonName: 'meshrelay-root', now });
  const outcome = await exchange(t, {
    host: 'localhost',
    port,
    ca: ca.certPem,
    ...clientCertificate(foreignCa, 'east'),
  }).then(
    (data) => `data:${data}`,
    (err: Error) => `error:${err.message}`,
  );
  assert.doesNotMatch(outcome, /should not be read/);
  await waitFor(() => clientErrors.length > 0, 5000);
  assert.equal(accepted.count, 0);
});

test('given an mTLS server, when an agent presents no certificate, then the handshake is refused', async (t) => {
  const { port, clientErrors, accepted } = await startServer(
    t,
    { requestCert: true, rejectUnauthorized: true, ca: ca.certPem },
    () => 'should not be read',
  );
  const outcome = await exchange(t, { host: 'localhost', port, ca: ca.certPem }).then(
    (data) => `data:${data}`,
    (err: Error) => `error:${err.message}`,
  );
  assert.doesNotMatch(outcome, /should not be read/);
  await waitFor(() => clientErrors.length > 0, 5000);
  assert.equal(accepted.count, 0);
});

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
