import assert from 'node:assert/strict';
import { createHash, createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import forge from 'node-forge';
import { MeshrelayError } from '@meshrelay/api';
import {
  createIntermediateCsr,
  createMeshRoot,
  generateKeyPair,
  rootIdOf,
  signIntermediateCsr,
  type KeyPair,
} from '../src/index.ts';
import { certText, opensslDir, verifyStrict } from './openssl.ts';

const TIMEOUT = { timeout: 60_000 };
const NOW = new Date('2026-11-29T12:00:00Z');
const DAY_MS = 86_400_000;
const TD = 'cluster.local';
const rootKey = generateKeyPair();
const root = createMeshRoot({ now: NOW, orgName: 'Acme', ttlDays: 365, keyPair: rootKey });
const agentKey = generateKeyPair();

const certificateError = (fragment: string) => (err: unknown) =>
  err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_CERTIFICATE' && err.message.includes(fragment);

interface CsrShape {
  readonly cn?: string;
  readonly altNames?: readonly object[];
  readonly extra?: readonly object[];
  readonly key?: KeyPair;
}

/** A CSR built by hand, so each test can ask for exactly what it wants to see refused. */
function handCsr(shape: CsrShape = {}): string {
  const key = shape.key ?? agentKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.publicKeyFromPem(key.publicKeyPem);
  csr.setSubject([{ name: 'commonName', value: shape.cn ?? 'east' }]);
  const altNames = shape.altNames ?? [{ type: 6, value: `spiffe://${TD}` }];
  const extensions = [...(altNames.length > 0 ? [{ name: 'subjectAltName', altNames }] : []), ...(shape.extra ?? [])];
  if (extensions.length > 0) csr.setAttributes([{ name: 'extensionRequest', extensions }]);
  csr.sign(forge.pki.privateKeyFromPem(key.privateKeyPem) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return forge.pki.certificationRequestToPem(csr);
}

const sign = (csrPem: string, overrides: Partial<Parameters<typeof signIntermediateCsr>[0]> = {}) =>
  signIntermediateCsr({
    root,
    csrPem,
    cluster: 'east',
    trustDomain: TD,
    ttlDays: 30,
    orgName: 'Acme',
    now: NOW,
    ...overrides,
  });

test('given a certificate, rootIdOf is the first 16 hex chars of sha256 over its DER', TIMEOUT, () => {
  const der = new X509Certificate(root.certPem).raw;
  const expected = createHash('sha256').update(der).digest('hex').slice(0, 16);
  assert.equal(rootIdOf(root.certPem), expected);
  assert.match(rootIdOf(root.certPem), /^[0-9a-f]{16}$/);
  assert.throws(() => rootIdOf('not a pem'), certificateError('root certificate is not a readable'));
});

test('given createMeshRoot, the root has the contract extensions and O', TIMEOUT, async (t) => {
  const dir = await opensslDir();
  t.after(() => dir.close());
  const text = await certText(await dir.file('root.pem', root.certPem));
  assert.match(text, /Subject: CN ?= ?meshrelay mesh root, O ?= ?Acme/);
  assert.match(text, /X509v3 Basic Constraints: critical\s+CA:TRUE\n/);
  assert.match(text, /X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign\n/);
  assert.match(text, /X509v3 Subject Key Identifier:/);
  assert.equal((text.match(/X509v3 (?!extensions)/g) ?? []).length, 3, 'no extension beyond the three');
  const cert = new X509Certificate(root.certPem);
  assert.equal(cert.validToDate.getTime(), NOW.getTime() + 365 * DAY_MS);
  assert.ok(!root.certPem.includes('\r'), 'PEM uses LF line ends');
});

test(
  'given a CSR from createIntermediateCsr, the signed intermediate has the contract extensions',
  TIMEOUT,
  async (t) => {
    const { csrPem, keyPem } = await createIntermediateCsr({
      cluster: 'east',
      trustDomain: TD,
      orgName: 'Acme',
      rsaKeyBits: 2048,
    });
    const issued = sign(csrPem);
    const dir = await opensslDir();
    t.after(() => dir.close());
    const text = await certText(await dir.file('int.pem', issued.certPem));
    assert.match(text, /Subject: CN ?= ?east, O ?= ?Acme/);
    assert.match(text, /X509v3 Basic Constraints: critical\s+CA:TRUE, pathlen:0\n/);
    assert.match(text, /X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign\n/);
    assert.match(text, /X509v3 Subject Alternative Name:\s+URI:spiffe:\/\/cluster\.local\n/);
    assert.match(text, /X509v3 Subject Key Identifier:/);
    assert.match(text, /X509v3 Authority Key Identifier:/);
    assert.equal((text.match(/X509v3 (?!extensions)/g) ?? []).length, 5, 'no extension beyond the five');
    const cert = new X509Certificate(issued.certPem);
    assert.ok(cert.checkPrivateKey(createPrivateKey(keyPem)), 'the CSR key is the certified key');
    assert.equal(issued.notAfter.getTime(), NOW.getTime() + 30 * DAY_MS);
    assert.equal(cert.validToDate.getTime(), issued.notAfter.getTime());
    const at = Math.floor(NOW.getTime() / 1000);
    const chain = await verifyStrict(
      await dir.file('root.pem', root.certPem),
      await dir.file('i.pem', issued.certPem),
      at,
    );
    assert.ok(chain.ok, chain.output);
  },
);

test('given a ttl beyond the root, the intermediate ends when the root ends', TIMEOUT, () => {
  const issued = sign(handCsr(), { ttlDays: 3650 });
  const rootEnd = new X509Certificate(root.certPem).validToDate;
  assert.equal(issued.notAfter.getTime(), rootEnd.getTime());
  assert.equal(new X509Certificate(issued.certPem).validToDate.getTime(), rootEnd.getTime());
});

test('given a CSR whose signature does not verify, it is refused', TIMEOUT, () => {
  const der = Buffer.from(forge.pem.decode(handCsr())[0]!.body, 'binary');
  der[der.length - 1] = der[der.length - 1]! ^ 0x01;
  const tampered = forge.pem.encode({ type: 'CERTIFICATE REQUEST', body: der.toString('binary') });
  assert.throws(() => sign(tampered), certificateError('signature does not verify'));
});

test('given an RSA-1024 CSR, it is refused naming the key size', TIMEOUT, () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 1024,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const weak = handCsr({ key: { privateKeyPem: privateKey, publicKeyPem: publicKey } });
  assert.throws(() => sign(weak), certificateError('RSA-1024'));
});

test(
  'given the policy key size as a floor, a smaller key is refused naming both and a larger one up to 8192 bits is signed',
  TIMEOUT,
  () => {
    // agentKey is RSA-2048: below a 3072-bit floor.
    assert.throws(() => sign(handCsr(), { minRsaBits: 3072 }), certificateError('RSA-2048; RSA-3072 to RSA-8192'));
    assert.doesNotThrow(() => sign(handCsr(), { minRsaBits: 2048 }));
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 6144,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const large = handCsr({ key: { privateKeyPem: privateKey, publicKeyPem: publicKey } });
    assert.ok(new X509Certificate(sign(large, { minRsaBits: 4096 }).certPem).ca);
  },
);

test('given a SAN other than exactly spiffe://<trustDomain>, it is refused', TIMEOUT, () => {
  const cases: (readonly object[])[] = [
    [],
    [{ type: 6, value: 'spiffe://other.local' }],
    [{ type: 6, value: `spiffe://${TD}/ns/x/sa/y` }],
    [
      { type: 6, value: `spiffe://${TD}` },
      { type: 2, value: 'east.example.com' },
    ],
    [{ type: 2, value: TD }],
  ];
  for (const altNames of cases) {
    assert.throws(() => sign(handCsr({ altNames })), certificateError('must be exactly URI spiffe://cluster.local'));
  }
});

test('given a CN other than the cluster, it is refused naming both', TIMEOUT, () => {
  assert.throws(() => sign(handCsr({ cn: 'west' })), certificateError('common name "west" is not the cluster "east"'));
});

test('given a CSR asking for more extensions, it is refused naming them', TIMEOUT, () => {
  const cases: [object, string][] = [
    [{ name: 'basicConstraints', cA: true, pathLenConstraint: 5 }, 'basicConstraints'],
    [{ name: 'extKeyUsage', serverAuth: true }, 'extKeyUsage'],
    [{ name: 'keyUsage', digitalSignature: true }, 'keyUsage'],
  ];
  for (const [extension, name] of cases) {
    assert.throws(() => sign(handCsr({ extra: [extension] })), certificateError(`cannot be given: ${name}`));
  }
});

test('given a refused CSR, nothing about the root changes and a good CSR still signs', TIMEOUT, () => {
  const before = root.certPem;
  assert.throws(() => sign(handCsr({ cn: 'west' })));
  assert.equal(root.certPem, before);
  assert.ok(sign(handCsr()).certPem.startsWith('-----BEGIN CERTIFICATE-----\n'));
});

test('given an expired root, signing is refused', TIMEOUT, () => {
  assert.throws(() => sign(handCsr(), { now: new Date(NOW.getTime() + 400 * DAY_MS) }), certificateError('not at'));
});

test('given bad options, they are refused as invalid arguments', TIMEOUT, async () => {
  const invalid = (err: unknown) => err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_ARGUMENT';
  assert.throws(() => createMeshRoot({ now: NOW, ttlDays: 0, keyPair: rootKey }), invalid);
  assert.throws(() => createMeshRoot({ now: NOW, commonName: '', keyPair: rootKey }), invalid);
  assert.throws(() => sign(handCsr(), { trustDomain: 'Bad Domain' }), invalid);
  assert.throws(() => sign(handCsr(), { cluster: 'Not_A_Label' }), invalid);
  await assert.rejects(createIntermediateCsr({ cluster: 'east', trustDomain: TD, rsaKeyBits: 1024 }), invalid);
});
