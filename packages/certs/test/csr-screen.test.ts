import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import forge from 'node-forge';
import { MeshrelayError } from '@meshrelay/api';
import { createCsr, createRootCa, signClientCsr } from '../src/index.ts';

const NOW = new Date('2026-11-22T12:00:00Z');
const ca = createRootCa({ commonName: 'meshrelay-root', now: NOW });
const sign = (csrPem: string) =>
  signClientCsr(ca, csrPem, {
    cluster: 'a',
    trustDomain: 'meshrelay.local',
    uid: 'u',
    lifetimeSeconds: 3600,
    now: NOW,
  });

function csrForKey(options: { modulusLength: number; publicExponent?: number }): string {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', options);
  return createCsr({
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    cluster: 'a',
  });
}

function refusedFor(pattern: RegExp) {
  return (err: unknown) =>
    err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_CERTIFICATE' && pattern.test(err.message);
}

test('given a correctly signed CSR whose RSA exponent is 3, when signed, then it is refused for its exponent', () => {
  assert.throws(() => sign(csrForKey({ modulusLength: 2048, publicExponent: 3 })), refusedFor(/exponent is not 65537/));
});

test('given a correctly signed CSR with an RSA-5120 key, when signed, then it is refused for its size', () => {
  assert.throws(() => sign(csrForKey({ modulusLength: 5120 })), refusedFor(/RSA-5120; RSA-2048 to RSA-4096/));
});

test('given a correctly signed CSR with an RSA-1024 key, when signed, then it is refused for its size', () => {
  assert.throws(() => sign(csrForKey({ modulusLength: 1024 })), refusedFor(/RSA-1024; RSA-2048 to RSA-4096/));
});

test('given a CSR whose exponent has 4096 bits, when signed, then it is refused for the exponent before any signature check', () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = forge.pki.privateKeyFromPem(
    privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  ) as forge.pki.rsa.PrivateKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.setRsaPublicKey(key.n, new forge.jsbn.BigInteger('f'.repeat(1024), 16));
  csr.setSubject([{ name: 'commonName', value: 'a' }]);
  csr.sign(key, forge.md.sha256.create());
  assert.throws(() => sign(forge.pki.certificationRequestToPem(csr)), refusedFor(/exponent is not 65537/));
});

test('given an RSA-4096 CSR signed with its own key, when signed, then a certificate is issued', () => {
  assert.match(sign(csrForKey({ modulusLength: 4096 })).certPem, /BEGIN CERTIFICATE/);
});
