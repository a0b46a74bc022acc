// Workload certificates from two clusters' intermediates in a real mutual-TLS handshake.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import tls from 'node:tls';
import {
  bundlePem,
  createIntermediateCsr,
  createMeshRoot,
  generateKeyPair,
  issueWorkloadCertificate,
  signIntermediateCsr,
  type CaBundle,
} from '../src/index.ts';

// Real handshakes check real validity windows, so these certificates use the real clock.
const now = new Date();
const TIMEOUT = { timeout: 60_000 };
const root = createMeshRoot({ now, ttlDays: 1, keyPair: generateKeyPair() });
const otherRoot = createMeshRoot({ now, ttlDays: 1, commonName: 'other root', keyPair: generateKeyPair() });

interface Workload {
  readonly key: string;
  /** certificate.pem: the leaf, then the intermediate. */
  readonly cert: string;
}

async function workload(signer: CaBundle, cluster: string, serviceAccount: string): Promise<Workload> {
  const trustDomain = `${cluster}.local`;
  const { csrPem, keyPem } = await createIntermediateCsr({ cluster, trustDomain, rsaKeyBits: 2048 });
  const issued = signIntermediateCsr({ root: signer, csrPem, cluster, trustDomain, ttlDays: 1, now });
  const intermediate = { certPem: issued.certPem, keyPem };
  const leaf = issueWorkloadCertificate({
    intermediate,
    trustDomain,
    namespace: 'shop',
    serviceAccount,
    lifetimeSeconds: 3600,
    now,
  });
  return { key: leaf.keyPem, cert: leaf.certPem + intermediate.certPem };
}

/** The peer's URI SAN as node:tls reports it. */
const peerUri = (socket: tls.TLSSocket) => socket.getPeerCertificate().subjectaltname ?? '';

async function startServer(t: TestContext, identity: Workload, ca: string) {
  const peers: string[] = [];
  const refused: Error[] = [];
  const server = tls.createServer({ ...identity, ca, requestCert: true, rejectUnauthorized: true }, (socket) => {
    peers.push(peerUri(socket));
    socket.end('ok');
  });
  server.on('tlsClientError', (err) => refused.push(err));
  const firstRefusal = new Promise<Error>((resolve) => server.once('tlsClientError', resolve));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  return { port: (server.address() as AddressInfo).port, peers, refused, firstRefusal };
}

async function call(port: number, identity: Workload, ca: string): Promise<{ reply: string; serverUri: string }> {
  const socket = tls.connect({
    ...identity,
    ca,
    host: '127.0.0.1',
    port,
    // Mesh peers are named by their SPIFFE URI, not a host name: checked below instead.
    checkServerIdentity: () => undefined,
  });
  try {
    await once(socket, 'secureConnect');
    const serverUri = peerUri(socket);
    let reply = '';
    socket.setEncoding('utf8');
    for await (const chunk of socket) reply += chunk as string;
    return { reply, serverUri };
  } finally {
    socket.destroy();
  }
}

test('given leaves from two clusters under one root, mutual TLS succeeds both ways', TIMEOUT, async (t) => {
  const east = await workload(root, 'east', 'cart');
  const west = await workload(root, 'west', 'checkout');
  const server = await startServer(t, east, bundlePem([root.certPem]));
  const result = await call(server.port, west, bundlePem([root.certPem]));
  assert.equal(result.reply, 'ok');
  assert.equal(result.serverUri, 'URI:spiffe://east.local/ns/shop/sa/cart');
  assert.deepEqual(server.peers, ['URI:spiffe://west.local/ns/shop/sa/checkout']);
});

test('given a two-root bundle, a leaf under either root is accepted', TIMEOUT, async (t) => {
  const both = bundlePem([root.certPem, otherRoot.certPem]);
  const east = await workload(root, 'east', 'cart');
  const west = await workload(otherRoot, 'west', 'checkout');
  const server = await startServer(t, east, both);
  assert.equal((await call(server.port, west, both)).reply, 'ok');
  assert.deepEqual(server.peers, ['URI:spiffe://west.local/ns/shop/sa/checkout']);
});

test('given a client leaf under a root the server does not hold, the handshake is refused', TIMEOUT, async (t) => {
  const east = await workload(root, 'east', 'cart');
  const stranger = await workload(otherRoot, 'west', 'checkout');
  const server = await startServer(t, east, bundlePem([root.certPem]));
  // With TLS 1.3 the client may see the refusal as an error or as an empty, closed stream.
  const outcome = await call(server.port, stranger, bundlePem([root.certPem, otherRoot.certPem])).then(
    (r) => r.reply,
    (err: Error) => `refused: ${err.message}`,
  );
  assert.notEqual(outcome, 'ok');
  // The server drops the handshake (node reports it as a reset) and no request reaches it.
  await server.firstRefusal;
  assert.deepEqual(server.peers, []);
  assert.equal(server.refused.length, 1);
});
