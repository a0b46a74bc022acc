import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import {
  createIntermediateCsr,
  createMeshRoot,
  generateKeyPair,
  issueWorkloadCertificate,
  jitteredLifetimeSeconds,
  renewalTime,
  signIntermediateCsr,
  type CaBundle,
} from '../src/index.ts';
import { certText, opensslDir, verifyStrict } from './openssl.ts';

const TIMEOUT = { timeout: 60_000 };
const NOW = new Date('2026-11-29T12:00:00Z');
const DAY = 86_400;
const TD = 'cluster.local';
const root = createMeshRoot({ now: NOW, keyPair: generateKeyPair() });

async function intermediateFor(ttlDays: number): Promise<CaBundle> {
  const { csrPem, keyPem } = await createIntermediateCsr({ cluster: 'east', trustDomain: TD, rsaKeyBits: 2048 });
  const issued = signIntermediateCsr({ root, csrPem, cluster: 'east', trustDomain: TD, ttlDays, now: NOW });
  return { certPem: issued.certPem, keyPem };
}

const issue = (intermediate: CaBundle, overrides: Partial<Parameters<typeof issueWorkloadCertificate>[0]> = {}) =>
  issueWorkloadCertificate({
    intermediate,
    trustDomain: TD,
    namespace: 'shop',
    serviceAccount: 'cart',
    lifetimeSeconds: DAY,
    now: NOW,
    ...overrides,
  });

test('given an intermediate, the workload certificate has the contract extensions and verifies', TIMEOUT, async (t) => {
  const intermediate = await intermediateFor(30);
  const leaf = issue(intermediate);
  const dir = await opensslDir();
  t.after(() => dir.close());
  const leafPath = await dir.file('leaf.pem', leaf.certPem);
  const text = await certText(leafPath);
  assert.match(text, /Subject: *\n/);
  assert.match(text, /Public Key Algorithm: id-ecPublicKey[\s\S]*NIST CURVE: P-256/);
  assert.match(text, /X509v3 Basic Constraints: critical\s+CA:FALSE\n/);
  assert.match(text, /X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment\n/);
  assert.match(text, /X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication\n/);
  assert.match(text, /X509v3 Subject Alternative Name: critical\s+URI:spiffe:\/\/cluster\.local\/ns\/shop\/sa\/cart\n/);
  assert.match(text, /X509v3 Authority Key Identifier:/);
  assert.equal((text.match(/X509v3 (?!extensions)/g) ?? []).length, 5, 'no extension beyond the five');
  const cert = new X509Certificate(leaf.certPem);
  assert.ok(cert.checkPrivateKey(createPrivateKey(leaf.keyPem)));
  assert.ok(cert.verify(new X509Certificate(intermediate.certPem).publicKey));
  assert.equal(leaf.notAfter.getTime(), NOW.getTime() + DAY * 1000);
  assert.equal(leaf.notBefore.getTime(), NOW.getTime() - 60_000);
  const result = await verifyStrict(
    await dir.file('root.pem', root.certPem),
    leafPath,
    NOW.getTime() / 1000,
    await dir.file('int.pem', intermediate.certPem),
  );
  assert.ok(result.ok, result.output);
});

test('given an RSA key pair, it is certified as given', TIMEOUT, async () => {
  const intermediate = await intermediateFor(30);
  const keyPair = generateKeyPair();
  const leaf = issue(intermediate, { keyPair });
  assert.equal(leaf.keyPem, keyPair.privateKeyPem);
  assert.ok(new X509Certificate(leaf.certPem).checkPrivateKey(createPrivateKey(keyPair.privateKeyPem)));
});

test('given a lifetime beyond the intermediate, the leaf ends with the intermediate', TIMEOUT, async () => {
  const intermediate = await intermediateFor(1);
  const leaf = issue(intermediate, { lifetimeSeconds: 5 * DAY });
  const end = new X509Certificate(intermediate.certPem).validToDate;
  assert.equal(leaf.notAfter.getTime(), end.getTime());
  assert.equal(new X509Certificate(leaf.certPem).validToDate.getTime(), end.getTime());
});

test('given a clock just behind the intermediate, the leaf does not start before it', TIMEOUT, async () => {
  const intermediate = await intermediateFor(1);
  const leaf = issue(intermediate, { now: new Date(NOW.getTime() - 30_000) });
  const start = new X509Certificate(intermediate.certPem).validFromDate;
  assert.equal(leaf.notBefore.getTime(), start.getTime());
  assert.equal(new X509Certificate(leaf.certPem).validFromDate.getTime(), start.getTime());
});

test('given bad names or an expired intermediate, issuing is refused', TIMEOUT, async () => {
  const intermediate = await intermediateFor(1);
  const code = (c: string) => (err: unknown) => err instanceof MeshrelayError && err.code === c;
  assert.throws(() => issue(intermediate, { namespace: 'Shop' }), code('MESHRELAY_ERR_INVALID_ARGUMENT'));
  assert.throws(() => issue(intermediate, { serviceAccount: 'a/b' }), code('MESHRELAY_ERR_INVALID_ARGUMENT'));
  assert.throws(() => issue(intermediate, { lifetimeSeconds: 0 }), code('MESHRELAY_ERR_INVALID_ARGUMENT'));
  assert.throws(
    () => issue(intermediate, { now: new Date(NOW.getTime() + 2 * DAY * 1000) }),
    code('MESHRELAY_ERR_CERTIFICATE'),
  );
});

test('jitteredLifetimeSeconds stays within ±fraction at the edges and spreads', TIMEOUT, () => {
  const base = DAY;
  assert.equal(
    jitteredLifetimeSeconds(base, () => 0),
    Math.round(base * 0.9),
  );
  assert.equal(
    jitteredLifetimeSeconds(base, () => 0.5),
    base,
  );
  const top = jitteredLifetimeSeconds(base, () => 0.9999999999);
  assert.ok(top <= base * 1.1 && top > base * 1.099, `top ${top}`);
  assert.equal(
    jitteredLifetimeSeconds(base, () => 0, 0.25),
    Math.round(base * 0.75),
  );
  assert.equal(
    jitteredLifetimeSeconds(base, () => 7),
    Math.round(base * 1.1),
    'a faulty random is clamped',
  );
  let seed = 42;
  const lcg = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const samples = Array.from({ length: 500 }, () => jitteredLifetimeSeconds(base, lcg));
  for (const s of samples) assert.ok(s >= base * 0.9 && s <= base * 1.1, `sample ${s}`);
  assert.ok(new Set(samples).size > 400, 'lifetimes spread rather than bunch');
  assert.ok(Math.min(...samples) < base * 0.92 && Math.max(...samples) > base * 1.08, 'the whole range is used');
  assert.throws(() => jitteredLifetimeSeconds(0));
  assert.throws(() => jitteredLifetimeSeconds(base, Math.random, 1));
});

test('renewalTime falls between 60 % and 80 % of the validity and spreads', TIMEOUT, () => {
  const notBefore = new Date('2026-11-29T00:00:00Z');
  const notAfter = new Date('2026-11-30T00:00:00Z');
  const at = (fraction: number) => notBefore.getTime() + fraction * DAY * 1000;
  assert.equal(renewalTime(notBefore, notAfter, () => 0).getTime(), at(0.6));
  assert.equal(renewalTime(notBefore, notAfter, () => 0.5).getTime(), at(0.7));
  const top = renewalTime(notBefore, notAfter, () => 0.9999999999).getTime();
  assert.ok(top <= at(0.8) && top > at(0.7999), `top ${top}`);
  let seed = 7;
  const lcg = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const samples = Array.from({ length: 500 }, () => renewalTime(notBefore, notAfter, lcg).getTime());
  for (const s of samples) assert.ok(s >= at(0.6) && s <= at(0.8));
  assert.ok(new Set(samples).size > 400, 'renewals spread rather than bunch');
  assert.throws(() => renewalTime(notAfter, notBefore));
});
