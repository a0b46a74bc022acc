import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import forge from 'node-forge';
import { MeshrelayError } from '@meshrelay/api';
import {
  certificateInfo,
  createCsr,
  createRootCa,
  generateKeyPair,
  issueServerCertificate,
  signClientCsr,
  verifyClientCertificate,
} from '../src/index.ts';

const NOW = new Date('2026-11-22T12:00:00Z');
const HOUR = 3600;
const ca = createRootCa({ commonName: 'meshrelay-root', now: NOW });
const agentKey = generateKeyPair();
const csrFor = (cluster: string) => createCsr({ ...agentKey, cluster });
const issue = (cluster = 'a', overrides: Partial<{ uid: string; now: Date; lifetimeSeconds: number }> = {}) =>
  signClientCsr(ca, csrFor(cluster), {
    cluster,
    trustDomain: 'meshrelay.local',
    uid: 'uid-1',
    lifetimeSeconds: HOUR,
    now: NOW,
    ...overrides,
  });

const hasCode = (code: string) => (err: unknown) => err instanceof MeshrelayError && err.code === code;

test('given a root CA, when created, then it is a self-signed CA with keyCertSign', () => {
  const cert = new X509Certificate(ca.certPem);
  assert.equal(cert.ca, true);
  assert.ok(cert.checkIssued(cert));
  assert.ok(cert.verify(cert.publicKey));
  assert.equal(cert.subject, 'CN=meshrelay-root');
  assert.equal(cert.validFromDate.getTime(), NOW.getTime() - 60_000);
});

test('given a CSR for the registered cluster, when signed and verified, then the identity round-trips', () => {
  const issued = issue('a');
  const identity = verifyClientCertificate(issued.certPem, ca, NOW);
  assert.deepEqual(identity, {
    cluster: 'a',
    uid: 'uid-1',
    spiffeId: 'spiffe://meshrelay.local/cluster/a',
    notBefore: new Date(NOW.getTime() - 60_000),
    notAfter: issued.notAfter,
    serial: issued.serial,
  });
  assert.equal(issued.notAfter.getTime(), NOW.getTime() + HOUR * 1000);
  assert.match(issued.serial, /^[0-9a-f]{32}$/);
});

test('given the DER bytes a TLS stack reports, when verified, then the identity is the same as from PEM', () => {
  const issued = issue('b');
  const der = new X509Certificate(issued.certPem).raw;
  assert.deepEqual(verifyClientCertificate(der, ca, NOW), verifyClientCertificate(issued.certPem, ca, NOW));
});

test('given an issued client certificate, when inspected, then it has clientAuth, the cluster key and a start 60 s back', () => {
  const cert = new X509Certificate(issue('a').certPem);
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.2']);
  assert.equal(cert.subjectAltName, 'URI:spiffe://meshrelay.local/cluster/a');
  assert.equal(cert.validFromDate.getTime(), NOW.getTime() - 60_000);
  assert.ok(cert.checkPrivateKey(createPrivateKey(agentKey.privateKeyPem)));
});

test('given a revocation mark after now − 60 s, when a certificate is issued, then its notBefore is the mark', () => {
  const mark = new Date(NOW.getTime() - 5_000);
  const issued = signClientCsr(ca, csrFor('a'), {
    cluster: 'a',
    trustDomain: 'meshrelay.local',
    uid: 'u',
    lifetimeSeconds: HOUR,
    now: NOW,
    notBeforeAtLeast: mark,
  });
  assert.equal(verifyClientCertificate(issued.certPem, ca, NOW).notBefore.getTime(), mark.getTime());
});

test('given two issues, when compared, then serials differ', () => {
  assert.notEqual(issue('a').serial, issue('a').serial);
});

test('given a CSR whose CN names another cluster, when signed, then it is refused', () => {
  assert.throws(
    () =>
      signClientCsr(ca, csrFor('b'), {
        cluster: 'a',
        trustDomain: 'meshrelay.local',
        uid: 'u',
        lifetimeSeconds: HOUR,
        now: NOW,
      }),
    (err: unknown) => hasCode('MESHRELAY_ERR_CERTIFICATE')(err) && /"b".*"a"/.test((err as Error).message),
  );
});

test('given a CSR whose CN was changed after signing, when signed, then it is refused for its signature', () => {
  const csr = forge.pki.certificationRequestFromPem(csrFor('a'));
  // Drop the cached signed body so the PEM carries the edited subject under the old signature.
  csr.certificationRequestInfo = null;
  csr.subject.getField('CN').value = 'b';
  const tampered = forge.pki.certificationRequestToPem(csr);
  assert.throws(
    () =>
      signClientCsr(ca, tampered, {
        cluster: 'b',
        trustDomain: 'meshrelay.local',
        uid: 'u',
        lifetimeSeconds: HOUR,
        now: NOW,
      }),
    (err: unknown) => hasCode('MESHRELAY_ERR_CERTIFICATE')(err) && /signature/.test((err as Error).message),
  );
});

test('given garbage instead of a CSR, when signed, then it is refused as a certificate error', () => {
  assert.throws(
    () =>
      signClientCsr(ca, 'not a csr', {
        cluster: 'a',
        trustDomain: 'meshrelay.local',
        uid: 'u',
        lifetimeSeconds: HOUR,
        now: NOW,
      }),
    hasCode('MESHRELAY_ERR_CERTIFICATE'),
  );
});

test('given a certificate from a foreign CA, when verified, then it is refused', () => {
  const foreignCa = createRootCa({ commonName: 'meshrelay-root', now: NOW });
  const foreign = signClientCsr(foreignCa, csrFor('a'), {
    cluster: 'a',
    trustDomain: 'meshrelay.local',
    uid: 'uid-1',
    lifetimeSeconds: HOUR,
    now: NOW,
  });
  assert.throws(
    () => verifyClientCertificate(foreign.certPem, ca, NOW),
    (err: unknown) =>
      hasCode('MESHRELAY_ERR_UNAUTHENTICATED')(err) && /not issued by the relay CA/.test((err as Error).message),
  );
});

test('given an expired certificate, when verified after its notAfter, then it is refused', () => {
  const issued = issue('a');
  const later = new Date(issued.notAfter.getTime() + 1000);
  assert.throws(
    () => verifyClientCertificate(issued.certPem, ca, later),
    (err: unknown) => hasCode('MESHRELAY_ERR_UNAUTHENTICATED')(err) && /expired/.test((err as Error).message),
  );
});

test('given a certificate not yet valid, when verified before its notBefore, then it is refused', () => {
  const earlier = new Date(NOW.getTime() - 61_000);
  assert.throws(
    () => verifyClientCertificate(issue('a').certPem, ca, earlier),
    hasCode('MESHRELAY_ERR_UNAUTHENTICATED'),
  );
});

test('given a server certificate from the same CA, when verified as a client, then it is refused for lacking clientAuth', () => {
  const server = issueServerCertificate(ca, {
    hosts: ['localhost'],
    lifetimeSeconds: HOUR,
    now: NOW,
    keyPair: agentKey,
  });
  assert.throws(
    () => verifyClientCertificate(server.certPem, ca, NOW),
    (err: unknown) => hasCode('MESHRELAY_ERR_UNAUTHENTICATED')(err) && /clientAuth/.test((err as Error).message),
  );
});

test('given bytes that are not a certificate, when verified, then it is refused as unauthenticated', () => {
  assert.throws(() => verifyClientCertificate(Buffer.from('nope'), ca, NOW), hasCode('MESHRELAY_ERR_UNAUTHENTICATED'));
});

test('given a lifetime past the CA expiry, when signed, then notAfter is capped at the CA expiry', () => {
  const shortCa = createRootCa({ commonName: 'short-root', validityDays: 1, now: NOW });
  const issued = signClientCsr(shortCa, csrFor('a'), {
    cluster: 'a',
    trustDomain: 'td',
    uid: 'u',
    lifetimeSeconds: 30 * 86_400,
    now: NOW,
  });
  assert.equal(issued.notAfter.getTime(), new X509Certificate(shortCa.certPem).validToDate.getTime());
});

test('given an issued certificate, when inspected with certificateInfo, then CN, window, serial and URIs are read', () => {
  const issued = issue('a');
  assert.deepEqual(certificateInfo(issued.certPem), {
    subjectCN: 'a',
    notBefore: new Date(NOW.getTime() - 60_000),
    notAfter: issued.notAfter,
    serial: issued.serial,
    uris: ['spiffe://meshrelay.local/cluster/a'],
  });
});

test('given hosts with names and IPs, when a server certificate is issued, then names are DNS SANs and IPs are IP SANs', () => {
  const server = issueServerCertificate(ca, {
    hosts: ['localhost', '127.0.0.1', '::1', 'relay.example.com'],
    lifetimeSeconds: HOUR,
    now: NOW,
    keyPair: agentKey,
  });
  const cert = new X509Certificate(server.certPem);
  assert.equal(
    cert.subjectAltName,
    'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:relay.example.com',
  );
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  assert.equal(server.keyPem, agentKey.privateKeyPem);
});

test('given no hosts or a malformed host, when a server certificate is issued, then it is refused', () => {
  assert.throws(
    () => issueServerCertificate(ca, { hosts: [], lifetimeSeconds: HOUR, now: NOW }),
    hasCode('MESHRELAY_ERR_INVALID_ARGUMENT'),
  );
  assert.throws(
    () => issueServerCertificate(ca, { hosts: ['bad host'], lifetimeSeconds: HOUR, now: NOW }),
    hasCode('MESHRELAY_ERR_INVALID_ARGUMENT'),
  );
});
