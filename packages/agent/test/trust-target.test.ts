// What the agent accepts from a MeshTrust answer before it writes anything, with certificates made by
// @meshrelay/certs as the server makes them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createIntermediateCsr, createMeshRoot, signIntermediateCsr, type CaBundle } from '@meshrelay/certs';
import { certificateId, checkCacerts, joinPems } from '../src/trust/cacerts.ts';
import { cacertsFor, checkTarget, renewalReason } from '../src/trust/trust-target.ts';

const TIMEOUT = { timeout: 120_000 };
const NOW = Date.now();

let fixtures: Promise<{ oldRoot: CaBundle; newRoot: CaBundle; csrPem: string; keyPem: string }> | undefined;
function pki() {
  fixtures ??= (async () => {
    const oldRoot = createMeshRoot({ now: new Date(NOW), rsaKeyBits: 2048, commonName: 'old root' });
    const newRoot = createMeshRoot({ now: new Date(NOW), rsaKeyBits: 2048, commonName: 'new root' });
    const csr = await createIntermediateCsr({ cluster: 'east', trustDomain: 'cluster.local', rsaKeyBits: 2048 });
    return { oldRoot, newRoot, ...csr };
  })();
  return fixtures;
}

function answer(bundle: readonly CaBundle[], signer: CaBundle, extra: Record<string, unknown> = {}) {
  return {
    enabled: true,
    generation: 3,
    phase: 1,
    bundleRootPems: bundle.map((r) => r.certPem),
    signingRootId: certificateId(signer.certPem),
    signingRootPem: signer.certPem,
    graceRatio: 0.2,
    rsaKeyBits: 2048,
    orgName: 'acme',
    ...extra,
  };
}

function sign(root: CaBundle, csrPem: string, ttlDays = 7, now = NOW) {
  return signIntermediateCsr({
    root,
    csrPem,
    cluster: 'east',
    trustDomain: 'cluster.local',
    ttlDays,
    now: new Date(now),
  }).certPem;
}

test('a good answer: the bundle in order, the signing root named by its id and in the bundle', TIMEOUT, async () => {
  const { oldRoot, newRoot } = await pki();
  const target = checkTarget(answer([oldRoot, newRoot], oldRoot));
  assert.equal(target.generation, 3);
  assert.equal(target.signingRootId, certificateId(oldRoot.certPem));
  assert.equal(target.bundle, joinPems([oldRoot.certPem, newRoot.certPem]));
});

test('bad answers are refused, each naming what is wrong', TIMEOUT, async () => {
  const { oldRoot, newRoot } = await pki();
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['empty bundle', answer([], oldRoot), /the bundle holds no root/],
    ['garbage root', { ...answer([oldRoot], oldRoot), bundleRootPems: ['not a pem'] }, /bundle root 0 is not a PEM/],
    ['signer not in bundle', answer([newRoot], oldRoot), /signing root [0-9a-f]{16} is not in the bundle/],
    [
      'id names another root',
      answer([oldRoot], oldRoot, { signingRootId: certificateId(newRoot.certPem) }),
      /does not name the signing root/,
    ],
    ['grace ratio out of range', answer([oldRoot], oldRoot, { graceRatio: 1.5 }), /grace_ratio 1.5/],
  ];
  for (const [name, res, message] of cases) assert.throws(() => checkTarget(res), message, name);
});

test(
  'a signed intermediate is accepted only when it matches the key, the signer and the trust domain',
  TIMEOUT,
  async () => {
    const { oldRoot, newRoot, keyPem, csrPem } = await pki();
    const target = checkTarget(answer([oldRoot, newRoot], newRoot));
    const good = cacertsFor(sign(newRoot, csrPem), keyPem, target, 'cluster.local', NOW);
    assert.equal(good.signingRootId, certificateId(newRoot.certPem));
    assert.deepEqual(good.bundleRootIds, [certificateId(oldRoot.certPem), certificateId(newRoot.certPem)]);

    // Signed by a root other than the one the answer names: refused.
    assert.throws(
      () => cacertsFor(sign(oldRoot, csrPem), keyPem, target, 'cluster.local', NOW),
      /ca-cert.pem is not signed by the root in cert-chain.pem/,
    );
    // Not for our key (another CSR's certificate).
    const other = await createIntermediateCsr({ cluster: 'east', trustDomain: 'cluster.local', rsaKeyBits: 2048 });
    assert.throws(
      () => cacertsFor(sign(newRoot, other.csrPem), keyPem, target, 'cluster.local', NOW),
      /ca-key.pem does not match ca-cert.pem/,
    );
    // Not a certificate at all.
    assert.throws(() => cacertsFor('garbage', keyPem, target, 'cluster.local', NOW), /not a PEM certificate/);
    // For another trust domain than the cluster's.
    assert.throws(
      () => cacertsFor(sign(newRoot, csrPem), keyPem, target, 'east.example', NOW),
      /names URI:spiffe:\/\/cluster.local, expected URI:spiffe:\/\/east.example/,
    );
    // Expired by the time it arrived.
    assert.throws(
      () => cacertsFor(sign(newRoot, csrPem, 1), keyPem, target, 'cluster.local', NOW + 3 * 86_400_000),
      /ca-cert.pem expired/,
    );
  },
);

test('renewal: none held, another signing root, another trust domain, or past the grace point', TIMEOUT, async () => {
  const { oldRoot, newRoot, keyPem, csrPem } = await pki();
  const steady = checkTarget(answer([oldRoot], oldRoot));
  const held = cacertsFor(sign(oldRoot, csrPem, 10), keyPem, steady, 'cluster.local', NOW);
  assert.equal(renewalReason(undefined, steady, 'cluster.local', NOW), 'no intermediate held');
  assert.equal(renewalReason(held, steady, 'cluster.local', NOW), undefined);
  assert.match(
    renewalReason(held, checkTarget(answer([oldRoot, newRoot], newRoot)), 'cluster.local', NOW) ?? '',
    /the signing root is now/,
  );
  assert.match(renewalReason(held, steady, 'east.example', NOW) ?? '', /the trust domain is east.example/);
  // Ten days of life, grace ratio 0.2: renewed from day 8 on, not before.
  assert.equal(renewalReason(held, steady, 'cluster.local', NOW + 7.9 * 86_400_000), undefined);
  assert.match(renewalReason(held, steady, 'cluster.local', NOW + 8.1 * 86_400_000) ?? '', /last 20 % of its life/);
});

test(
  'cacerts read back: a bundle without the signing root, or a chain that does not start with the CA, is refused',
  TIMEOUT,
  async () => {
    const { oldRoot, newRoot, keyPem, csrPem } = await pki();
    const cert = sign(oldRoot, csrPem);
    const files = {
      'ca-cert.pem': cert,
      'ca-key.pem': keyPem,
      'cert-chain.pem': joinPems([cert, oldRoot.certPem]),
      'root-cert.pem': joinPems([oldRoot.certPem]),
    };
    assert.equal(checkCacerts(files, new Date(NOW)).signingRootId, certificateId(oldRoot.certPem));
    assert.throws(
      () => checkCacerts({ ...files, 'root-cert.pem': joinPems([newRoot.certPem]) }, new Date(NOW)),
      /root-cert.pem does not hold the root/,
    );
    assert.throws(
      () => checkCacerts({ ...files, 'cert-chain.pem': joinPems([oldRoot.certPem, oldRoot.certPem]) }, new Date(NOW)),
      /cert-chain.pem does not start with ca-cert.pem/,
    );
    assert.throws(
      () => checkCacerts({ ...files, 'ca-key.pem': 'nope' }, new Date(NOW)),
      /ca-key.pem is not a private key/,
    );
  },
);
