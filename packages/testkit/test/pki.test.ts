import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { verifyClientCertificate } from '@meshrelay/certs';
import { createTestPki } from '../src/index.ts';

test('given clusters a and b, when a test PKI is built, then each client certificate verifies as its cluster under the CA', () => {
  const pki = createTestPki({ clusters: ['a', 'b'] });
  for (const cluster of ['a', 'b']) {
    const client = pki.clientCerts[cluster]!;
    const identity = verifyClientCertificate(client.certPem, pki.ca, new Date());
    assert.deepEqual(
      [identity.cluster, identity.uid, identity.spiffeId],
      [cluster, client.uid, `spiffe://${pki.trustDomain}/cluster/${cluster}`],
    );
  }
});

test('given a test PKI, when the foreign client certificate is verified against the relay CA, then it is refused', () => {
  const pki = createTestPki({ clusters: ['a'] });
  assert.equal(verifyClientCertificate(pki.foreignClientCert.certPem, pki.foreignCa, new Date()).cluster, 'a');
  assert.throws(
    () => verifyClientCertificate(pki.foreignClientCert.certPem, pki.ca, new Date()),
    (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_UNAUTHENTICATED',
  );
});

test('given two test PKIs in one process, when compared, then keys are reused but certificates and uids are new', () => {
  const first = createTestPki({ clusters: ['a'] });
  const second = createTestPki({ clusters: ['a'] });
  assert.equal(second.ca.keyPem, first.ca.keyPem);
  assert.notEqual(second.ca.certPem, first.ca.certPem);
  assert.notEqual(second.clientCerts.a!.uid, first.clientCerts.a!.uid);
  assert.notEqual(second.ca.keyPem, second.foreignCa.keyPem);
  assert.equal(
    new X509Certificate(first.serverCert.certPem).subjectAltName,
    'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1',
  );
});
