// Workload certificates from the cluster's intermediate: jittered lifetimes, renewal at a jittered point,
// reissue when the intermediate changes, the bundle rewritten alone, and leaves under old roots remembered.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { createIntermediateCsr, createMeshRoot, signIntermediateCsr, type CaBundle } from '@meshrelay/certs';
import { certificateBlocks, certificateId, type Cacerts } from '../src/trust/cacerts.ts';
import { cacertsFor, checkTarget } from '../src/trust/trust-target.ts';
import { WorkloadCertFiles } from '../src/trust/workload-cert-files.ts';
import { WorkloadIssuer } from '../src/trust/workload-issuer.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';

const TIMEOUT = { timeout: 120_000 };
const T0 = Date.now();
const TTL = 3600;
const REVIEWS = { namespace: 'bookinfo', serviceAccount: 'reviews' };
const WEB = { namespace: 'shop', serviceAccount: 'default' };

async function intermediate(root: CaBundle, bundle: readonly CaBundle[]): Promise<Cacerts> {
  const { csrPem, keyPem } = await createIntermediateCsr({
    cluster: 'east',
    trustDomain: 'cluster.local',
    rsaKeyBits: 2048,
  });
  const certPem = signIntermediateCsr({
    root,
    csrPem,
    cluster: 'east',
    trustDomain: 'cluster.local',
    ttlDays: 7,
    now: new Date(T0),
  }).certPem;
  const target = checkTarget({
    enabled: true,
    bundleRootPems: bundle.map((r) => r.certPem),
    signingRootPem: root.certPem,
    graceRatio: 0.2,
  });
  return cacertsFor(certPem, keyPem, target, 'cluster.local', T0);
}

async function issuerAt(t: TestContext, dir?: string) {
  const clock = { now: T0, random: 0.5 };
  const files = new WorkloadCertFiles(dir ?? path.join(await tempDir(t), 'workload-certs'));
  const issuer = new WorkloadIssuer({
    files,
    ttlSeconds: TTL,
    logger: captureLogger().logger,
    now: () => clock.now,
    random: () => clock.random,
  });
  return { issuer, files, clock };
}

async function leafOf(files: WorkloadCertFiles, id: typeof REVIEWS) {
  const content = await files.read(id);
  assert.ok(content, `${id.namespace}/${id.serviceAccount} has files`);
  const [leaf, chainIntermediate] = certificateBlocks(content.certificatePem);
  return { content, leaf: new X509Certificate(leaf ?? ''), chainIntermediate };
}

const rootA = createMeshRoot({ now: new Date(T0), rsaKeyBits: 2048, commonName: 'root a' });
const rootB = createMeshRoot({ now: new Date(T0), rsaKeyBits: 2048, commonName: 'root b' });

test(
  'issued per identity with a jittered lifetime; nothing rewritten until the jittered renewal point',
  TIMEOUT,
  async (t) => {
    const cacerts = await intermediate(rootA, [rootA]);
    const { issuer, files, clock } = await issuerAt(t);
    clock.random = 0; // the shortest lifetime (-10 %) and the earliest renewal point (60 %)
    assert.equal(await issuer.reconcile([REVIEWS, WEB], cacerts, 'cluster.local'), 2);
    const first = await leafOf(files, REVIEWS);
    const lifetime = (Date.parse(first.leaf.validTo) - Date.parse(first.leaf.validFrom)) / 1000;
    // Valid from 60 s before issue (clock skew), so the life is the jittered lifetime plus that minute.
    assert.ok(Math.abs(lifetime - (TTL * 0.9 + 60)) <= 2, `lifetime ${lifetime}`);
    assert.equal(
      first.chainIntermediate,
      cacerts.files['ca-cert.pem'],
      'certificate.pem is the leaf and its intermediate',
    );
    assert.equal(first.content.caPem, cacerts.files['root-cert.pem']);
    assert.equal(first.leaf.subjectAltName, 'URI:spiffe://cluster.local/ns/bookinfo/sa/reviews');

    const renewAt = Date.parse(first.leaf.validFrom) + 0.6 * lifetime * 1000;
    clock.now = renewAt - 5_000;
    assert.equal(await issuer.reconcile([REVIEWS, WEB], cacerts, 'cluster.local'), 0, 'before the renewal point');
    clock.now = renewAt + 5_000;
    assert.equal(await issuer.reconcile([REVIEWS, WEB], cacerts, 'cluster.local'), 2, 'both renewed past it');
    const renewed = await leafOf(files, REVIEWS);
    assert.notEqual(renewed.content.privateKeyPem, first.content.privateKeyPem, 'a new key with each certificate');

    clock.random = 0.999; // the longest lifetime: +10 %
    clock.now += TTL * 1000;
    await issuer.reconcile([REVIEWS], cacerts, 'cluster.local');
    const longest = await leafOf(files, REVIEWS);
    const longLife = (Date.parse(longest.leaf.validTo) - Date.parse(longest.leaf.validFrom)) / 1000;
    assert.ok(Math.abs(longLife - (TTL * 1.1 + 60)) <= 2, `lifetime ${longLife}`);
    assert.equal(await files.read(WEB), undefined, 'an identity no longer discovered loses its files');
    assert.equal(issuer.count, 1);
  },
);

test(
  'a new intermediate reissues every identity at once; a new bundle alone keeps leaf and key',
  TIMEOUT,
  async (t) => {
    const first = await intermediate(rootA, [rootA]);
    const { issuer, files } = await issuerAt(t);
    await issuer.reconcile([REVIEWS, WEB], first, 'cluster.local');
    const before = await leafOf(files, REVIEWS);

    // Phase 1: the bundle gains root B; the intermediate stays.
    const widened: Cacerts = {
      ...first,
      files: { ...first.files, 'root-cert.pem': `${rootA.certPem.trim()}\n${rootB.certPem.trim()}\n` },
    };
    assert.equal(await issuer.reconcile([REVIEWS, WEB], widened, 'cluster.local'), 2);
    const sameLeaf = await leafOf(files, REVIEWS);
    assert.equal(sameLeaf.content.privateKeyPem, before.content.privateKeyPem);
    assert.equal(sameLeaf.content.certificatePem, before.content.certificatePem);
    assert.equal(sameLeaf.content.caPem, widened.files['root-cert.pem']);

    // Phase 2: an intermediate under root B; every leaf reissued from it, under a new key.
    const resigned = await intermediate(rootB, [rootA, rootB]);
    assert.equal(await issuer.reconcile([REVIEWS, WEB], resigned, 'cluster.local'), 2);
    const after = await leafOf(files, REVIEWS);
    assert.equal(after.chainIntermediate, resigned.files['ca-cert.pem']);
    assert.notEqual(after.content.privateKeyPem, before.content.privateKeyPem);
    const verifiedBy = new X509Certificate(resigned.files['ca-cert.pem']);
    assert.ok(after.leaf.verify(verifiedBy.publicKey));
  },
);

test(
  'leaves under a root other than the signing one are reported until they expire, across a restart',
  TIMEOUT,
  async (t) => {
    const underA = await intermediate(rootA, [rootA, rootB]);
    const { issuer, files, clock } = await issuerAt(t);
    await issuer.reconcile([REVIEWS], underA, 'cluster.local');
    const leafA = await leafOf(files, REVIEWS);
    const idA = certificateId(rootA.certPem);
    const idB = certificateId(rootB.certPem);
    assert.equal(await issuer.oldRootLeafNotAfterMs(idA), 0, 'root A still signs: nothing old');
    assert.equal(await issuer.oldRootLeafNotAfterMs(idB), Date.parse(leafA.leaf.validTo));

    const underB = await intermediate(rootB, [rootA, rootB]);
    await issuer.reconcile([REVIEWS], underB, 'cluster.local');
    assert.equal(
      await issuer.oldRootLeafNotAfterMs(idB),
      Date.parse(leafA.leaf.validTo),
      'the replaced leaf may still be held',
    );

    const restarted = await issuerAt(t, files.dir);
    restarted.clock.now = clock.now;
    assert.equal(await restarted.issuer.oldRootLeafNotAfterMs(idB), Date.parse(leafA.leaf.validTo));
    assert.equal(
      await restarted.issuer.reconcile([REVIEWS], underB, 'cluster.local'),
      0,
      'a good leaf on disk is kept',
    );
    restarted.clock.now = Date.parse(leafA.leaf.validTo) + 1000;
    assert.equal(
      await restarted.issuer.oldRootLeafNotAfterMs(idB),
      0,
      'expired old-root leaves no longer hold the rotation',
    );
  },
);

test('a restart removes the files of identities no longer discovered, and keeps the others', TIMEOUT, async (t) => {
  const cacerts = await intermediate(rootA, [rootA]);
  const first = await issuerAt(t);
  await first.issuer.reconcile([REVIEWS, WEB], cacerts, 'cluster.local');
  const kept = await first.files.read(REVIEWS);

  const restarted = await issuerAt(t, first.files.dir);
  assert.equal(await restarted.issuer.reconcile([REVIEWS], cacerts, 'cluster.local'), 0);
  assert.deepEqual(await restarted.files.list(), [REVIEWS]);
  assert.deepEqual(await restarted.files.read(REVIEWS), kept);
});

test('an identity that cannot get a certificate is logged once, and does not stop the others', TIMEOUT, async (t) => {
  const cacerts = await intermediate(rootA, [rootA]);
  const { logger, lines } = captureLogger();
  const files = new WorkloadCertFiles(path.join(await tempDir(t), 'workload-certs'));
  const issuer = new WorkloadIssuer({ files, ttlSeconds: TTL, logger });
  const bad = { namespace: 'bookinfo', serviceAccount: 'Not_A_Name' };
  for (let i = 0; i < 3; i++) await issuer.reconcile([bad, REVIEWS], cacerts, 'cluster.local');
  const errors = lines.filter((l) => l['msg'] === 'workload certificate not issued');
  assert.equal(errors.length, 1, 'one line for one problem');
  assert.match(String((errors[0]?.['err'] as { message?: string } | undefined)?.message), /Not_A_Name/);
  assert.ok(await files.read(REVIEWS), 'the good identity has its certificate');
});

test('the MeshTrust report lists at most 200 workloads and counts the rest', TIMEOUT, async (t) => {
  const cacerts = await intermediate(rootA, [rootA]);
  const { issuer } = await issuerAt(t);
  const ids = Array.from({ length: 203 }, (_, i) => ({ namespace: 'load', serviceAccount: `sa-${i}` }));
  await issuer.reconcile(ids, cacerts, 'cluster.local');
  const report = issuer.report();
  assert.equal(report.workloads.length, 200);
  assert.equal(report.workloadsNotListed, 3);
  assert.ok(report.workloads.every((w) => w.spiffeId.startsWith('spiffe://cluster.local/ns/load/sa/sa-')));
  assert.ok(report.workloads.every((w) => w.notAfterUnixMs > T0));
});
