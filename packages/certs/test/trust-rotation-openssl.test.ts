// A root rotation old -> new across three clusters, checked with the real `openssl verify -x509_strict`:
// for every pair of clusters, a leaf (with its chain) from one phase verifies against the bundle of
// the phase next to it, and the pairs two or more phases apart that must break do break.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bundlePem,
  createIntermediateCsr,
  createMeshRoot,
  generateKeyPair,
  isExactBundleStep,
  issueWorkloadCertificate,
  rootIdOf,
  signIntermediateCsr,
  targetFor,
  type CaBundle,
  type RotationPhase,
} from '../src/index.ts';
import { opensslDir, verifyStrict, type OpensslDir } from './openssl.ts';

const NOW = new Date('2026-11-29T12:00:00Z');
const AT = Math.floor(NOW.getTime() / 1000) + 3600;
const CLUSTERS = ['east', 'west', 'north'] as const;
const PHASES: readonly RotationPhase[] = [0, 1, 2, 3];
/** openssl's errors 19/20: the chain reaches no root in the bundle. */
const UNTRUSTED_ROOT =
  /error (19|20) at \d depth lookup: (self-signed certificate in certificate chain|unable to get local issuer certificate)/;

/**
 * Whether a leaf from a cluster at phase `leaf` must verify against a bundle at phase `bundle`,
 * written out rather than derived: phases next to each other always do; 0 and 3 never do; two
 * apart, only where the newer bundle still holds the older signer.
 */
const EXPECTED: Record<RotationPhase, Record<RotationPhase, boolean>> = {
  0: { 0: true, 1: true, 2: true, 3: false },
  1: { 0: true, 1: true, 2: true, 3: false },
  2: { 0: false, 1: true, 2: true, 3: true },
  3: { 0: false, 1: true, 2: true, 3: true },
};

interface Held {
  readonly bundlePath: string;
  readonly intermediatePath: string;
  /** cert-chain.pem: the intermediate then its signing root, as istiod serves it. */
  readonly chainPath: string;
  readonly leafPath: string;
}

interface World {
  readonly dir: OpensslDir;
  readonly oldId: string;
  readonly newId: string;
  readonly rootPems: ReadonlyMap<string, string>;
  /** held.get(`${cluster}@${phase}`) */
  readonly held: ReadonlyMap<string, Held>;
}

async function intermediateFor(root: CaBundle, cluster: string): Promise<CaBundle> {
  const trustDomain = `${cluster}.local`;
  const { csrPem, keyPem } = await createIntermediateCsr({ cluster, trustDomain, rsaKeyBits: 2048 });
  const issued = signIntermediateCsr({ root, csrPem, cluster, trustDomain, ttlDays: 30, now: NOW });
  return { certPem: issued.certPem, keyPem };
}

async function buildWorld(dir: OpensslDir): Promise<World> {
  const roots = [createMeshRoot({ now: NOW, commonName: 'old root', keyPair: generateKeyPair() })];
  roots.push(createMeshRoot({ now: NOW, commonName: 'new root', keyPair: generateKeyPair() }));
  const [oldId, newId] = roots.map((r) => rootIdOf(r.certPem)) as [string, string];
  const rootById = new Map(roots.map((r) => [rootIdOf(r.certPem), r]));
  const rootPems = new Map([...rootById].map(([id, r]) => [id, r.certPem]));
  // A cluster re-signs under the new root with a new key, so each has one intermediate per signer.
  const intermediates = new Map<string, CaBundle>();
  for (const cluster of CLUSTERS) {
    for (const [id, root] of rootById) intermediates.set(`${cluster}/${id}`, await intermediateFor(root, cluster));
  }
  const held = new Map<string, Held>();
  for (const cluster of CLUSTERS) {
    for (const phase of PHASES) {
      const target = targetFor(phase, oldId, phase === 0 ? undefined : newId);
      const intermediate = intermediates.get(`${cluster}/${target.signingRootId}`)!;
      const leaf = issueWorkloadCertificate({
        intermediate,
        trustDomain: `${cluster}.local`,
        namespace: 'shop',
        serviceAccount: 'cart',
        lifetimeSeconds: 86_400,
        now: NOW,
      });
      const name = `${cluster}-${phase}`;
      const bundle = bundlePem(target.bundleRootIds.map((id) => rootPems.get(id)!));
      held.set(`${cluster}@${phase}`, {
        bundlePath: await dir.file(`${name}-root-cert.pem`, bundle),
        intermediatePath: await dir.file(`${name}-ca-cert.pem`, intermediate.certPem),
        chainPath: await dir.file(`${name}-cert-chain.pem`, intermediate.certPem + rootPems.get(target.signingRootId)!),
        leafPath: await dir.file(`${name}-leaf.pem`, leaf.certPem),
      });
    }
  }
  return { dir, oldId, newId, rootPems, held };
}

const held = (world: World, cluster: string, phase: RotationPhase) => world.held.get(`${cluster}@${phase}`)!;

async function ownChains(world: World): Promise<void> {
  for (const cluster of CLUSTERS) {
    for (const phase of PHASES) {
      const own = held(world, cluster, phase);
      const intermediate = await verifyStrict(own.bundlePath, own.intermediatePath, AT);
      assert.ok(intermediate.ok, `${cluster}@${phase} intermediate: ${intermediate.output}`);
      const leaf = await verifyStrict(own.bundlePath, own.leafPath, AT, own.intermediatePath);
      assert.ok(leaf.ok, `${cluster}@${phase} leaf: ${leaf.output}`);
    }
  }
}

async function adjacentPhases(world: World): Promise<void> {
  let checked = 0;
  for (const a of CLUSTERS) {
    for (const b of CLUSTERS) {
      for (const p of PHASES.slice(0, 3)) {
        const q = (p + 1) as RotationPhase;
        for (const [leafPhase, bundlePhase] of [
          [p, q],
          [q, p],
        ] as const) {
          const from = held(world, a, leafPhase);
          const to = held(world, b, bundlePhase);
          for (const untrusted of [from.intermediatePath, from.chainPath]) {
            const result = await verifyStrict(to.bundlePath, from.leafPath, AT, untrusted);
            assert.ok(result.ok, `${a}@${leafPhase} leaf against ${b}@${bundlePhase} bundle: ${result.output}`);
            checked++;
          }
        }
      }
    }
  }
  assert.equal(checked, 3 * 3 * 3 * 2 * 2);
}

async function phaseMatrix(world: World): Promise<void> {
  for (const a of CLUSTERS) {
    for (const b of CLUSTERS) {
      for (const leafPhase of PHASES) {
        for (const bundlePhase of PHASES) {
          const from = held(world, a, leafPhase);
          const to = held(world, b, bundlePhase);
          const result = await verifyStrict(to.bundlePath, from.leafPath, AT, from.chainPath);
          const expected = EXPECTED[leafPhase][bundlePhase];
          const what = `${a}@${leafPhase} leaf against ${b}@${bundlePhase} bundle`;
          assert.equal(result.ok, expected, `${what}: ${result.output}`);
          // It fails for want of a trusted root, not because a certificate is malformed.
          if (!expected) assert.match(result.output, UNTRUSTED_ROOT);
        }
      }
    }
  }
}

async function mustFail(world: World): Promise<void> {
  const mustFail: [RotationPhase, RotationPhase, string][] = [
    [0, 3, 'phase-0 leaf against a phase-3 bundle'],
    [3, 0, 'phase-3 leaf against a phase-0 bundle'],
    [2, 0, 'phase-2 leaf against a phase-0 bundle'],
    [1, 3, 'old-root leaf (phase 1) after phase 3'],
  ];
  for (const [leafPhase, bundlePhase, what] of mustFail) {
    const from = held(world, 'east', leafPhase);
    const to = held(world, 'west', bundlePhase);
    for (const untrusted of [from.intermediatePath, from.chainPath]) {
      const result = await verifyStrict(to.bundlePath, from.leafPath, AT, untrusted);
      assert.equal(result.ok, false, `${what} must not verify`);
      assert.match(result.output, UNTRUSTED_ROOT, what);
    }
  }
}

function bundleSteps(world: World): void {
  const oldPem = world.rootPems.get(world.oldId)!;
  const newPem = world.rootPems.get(world.newId)!;
  const idsAt = (p: RotationPhase) => targetFor(p, world.oldId, p === 0 ? undefined : world.newId).bundleRootIds;
  const texts = PHASES.map((p) => bundlePem(idsAt(p).map((id) => world.rootPems.get(id)!)));
  assert.deepEqual(texts, [oldPem, oldPem + newPem, oldPem + newPem, newPem]);
  for (const p of PHASES.slice(0, 3)) {
    assert.ok(isExactBundleStep(idsAt(p), idsAt((p + 1) as RotationPhase)), `phase ${p} -> ${p + 1}`);
  }
}

test(
  'a root rotation across three clusters, checked with openssl verify -x509_strict',
  { timeout: 120_000 },
  async (t) => {
    const dir = await opensslDir();
    t.after(() => dir.close());
    const world = await buildWorld(dir);
    await t.test('each cluster verifies its own chain at every phase', () => ownChains(world));
    await t.test('every pair of clusters in every pair of adjacent phases verifies, both ways', () =>
      adjacentPhases(world),
    );
    await t.test('every phase pair gives the written-out result, for every pair of clusters', () => phaseMatrix(world));
    await t.test('the must-fail cases fail: two or three phases apart, and an old-root leaf after phase 3', () =>
      mustFail(world),
    );
    await t.test('bundles change by exact concatenation between adjacent phases', () => bundleSteps(world));
  },
);
