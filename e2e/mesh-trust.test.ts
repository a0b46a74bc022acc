// Mesh trust end to end: a real meshrelay-server (file registry, a RootTrustPolicy file) and two
// meshrelay-agent processes (file provider), each writing its cluster's cacerts and workload
// certificates. Every chain verifies with `openssl verify -x509_strict`; then a root rotation runs
// while both clusters are sampled: at every sample each cluster's workload leaf verifies against the
// other cluster's bundle (and its own), bundles change only by exact superset or subset, and the
// rotation ends with the new root alone.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, readlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { isExactBundleStep, rootIdOf } from '@meshrelay/certs';
import { waitFor } from '@meshrelay/testkit';
import { Mesh } from './mesh.ts';

const run = promisify(execFile);
const CLUSTERS = ['east', 'west'] as const;
type Cluster = (typeof CLUSTERS)[number];

const POLICY = `apiVersion: admin.gloo.solo.io/v2
kind: RootTrustPolicy
metadata: { name: root, namespace: gloo-mesh }
spec:
  config:
    mgmtServerCa:
      generated: { rsaKeySizeBytes: 2048 }
    intermediateCertOptions:
      ttlDays: 7
      rsaKeySizeBytes: 2048
      orgName: acme
      secretRotationGracePeriodRatio: 0.2
`;

function podsYaml(cluster: Cluster): string {
  return `apiVersion: v1
kind: Pod
metadata: { name: reviews-${cluster}, namespace: bookinfo }
spec: { serviceAccountName: reviews, nodeName: node-1 }
status: { phase: Running, podIP: 10.0.${cluster === 'east' ? 1 : 2}.7 }
`;
}

/** What one cluster holds at one instant. */
interface Held {
  readonly bundle: string;
  readonly chain: string;
  readonly leafChain: string;
  readonly leafBundle: string;
}

interface Sample {
  readonly atMs: number;
  readonly phase: number;
  readonly held: Readonly<Record<Cluster, Held>>;
}

interface TrustView {
  readonly generation?: number;
  readonly phase?: number;
  readonly bundleRootIds?: readonly string[];
}

const pemBlocks = (text: string): string[] =>
  text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((b) => `${b}\n`) ?? [];
const rootIds = (bundle: string): string[] => pemBlocks(bundle).map(rootIdOf);

/** One cluster's cacerts and its reviews workload files, the three workload files from one version. */
async function readHeld(stateDir: string): Promise<Held | undefined> {
  try {
    const workload = join(stateDir, 'workload-certs', 'bookinfo', 'reviews');
    const version = join(workload, await readlink(join(workload, '..data')));
    const [bundle, chain, leafChain, leafBundle] = await Promise.all([
      readFile(join(stateDir, 'cacerts', 'root-cert.pem'), 'utf8'),
      readFile(join(stateDir, 'cacerts', 'cert-chain.pem'), 'utf8'),
      readFile(join(version, 'certificate.pem'), 'utf8'),
      readFile(join(version, 'ca_certificate.pem'), 'utf8'),
    ]);
    return { bundle, chain, leafChain, leafBundle };
  } catch {
    // A version switched away while it was read: the next sample reads the new one.
    return undefined;
  }
}

/** openssl verify -x509_strict of the first certificate of `chain` (the rest untrusted) against `bundle`, at a time. */
async function verify(dir: string, bundle: string, chain: string, atMs: number): Promise<string | undefined> {
  const [leaf, ...rest] = pemBlocks(chain);
  const tag = createHash('sha256').update(bundle).update(chain).digest('hex').slice(0, 12);
  const files = { ca: join(dir, `${tag}-ca.pem`), leaf: join(dir, `${tag}-leaf.pem`), more: join(dir, `${tag}-u.pem`) };
  writeFileSync(files.ca, bundle);
  writeFileSync(files.leaf, leaf ?? '');
  const args = ['verify', '-x509_strict', '-attime', String(Math.floor(atMs / 1000)), '-CAfile', files.ca];
  const untrusted = rest.filter((pem) => !pemBlocks(bundle).includes(pem));
  if (untrusted.length > 0) {
    writeFileSync(files.more, untrusted.join(''));
    args.push('-untrusted', files.more);
  }
  try {
    const { stdout } = await run('openssl', [...args, files.leaf]);
    return /: OK\s*$/.test(stdout) ? undefined : stdout;
  } catch (err) {
    return (err as { stdout?: string; stderr?: string }).stderr ?? String(err);
  }
}

test('mesh trust: two agents hold verifiable chains, and a root rotation never breaks a cross-cluster leaf', async (t) => {
  const scratch = mkdtempSync(join(tmpdir(), 'meshrelay-trust-e2e-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  writeFileSync(join(scratch, 'policy.yaml'), POLICY);
  mkdirSync(join(scratch, 'verify'));
  const mesh = await Mesh.start(t, {
    redis: false,
    serverFlags: ['--root-trust-policy', join(scratch, 'policy.yaml'), '--trust-tick', '200ms'],
  });
  await mesh.startServer();
  for (const cluster of CLUSTERS) await mesh.register(cluster);
  for (const cluster of CLUSTERS) {
    await mesh.startAgent(cluster, { extraFlags: ['--trust-interval', '1s', '--workload-cert-ttl', '8s'] });
    mesh.writeManifest(cluster, 'pods.yaml', podsYaml(cluster));
  }
  const stateOf = (c: Cluster) => mesh.agents.get(c)?.stateDir ?? '';
  const trust = () =>
    mesh.api<TrustView & { clusters?: { cluster: string; appliedGeneration: number }[] }>('/api/v1/trust');

  // Steady: both clusters applied the first generation.
  await waitFor(
    async () => {
      const view = await trust();
      const applied = (view.clusters ?? []).filter((c) => c.appliedGeneration === view.generation);
      return (
        applied.length === CLUSTERS.length &&
        (await Promise.all(CLUSTERS.map((c) => readHeld(stateOf(c))))).every(Boolean)
      );
    },
    { timeoutMs: 90_000, intervalMs: 200, message: 'both clusters apply the first generation' },
  );
  const vdir = join(scratch, 'verify');
  for (const cluster of CLUSTERS) {
    const held = (await readHeld(stateOf(cluster))) as Held;
    assert.equal(await verify(vdir, held.bundle, held.chain, Date.now()), undefined, `${cluster}: cacerts chain`);
    assert.equal(await verify(vdir, held.leafBundle, held.leafChain, Date.now()), undefined, `${cluster}: leaf`);
  }
  const oldRoot = ((await trust()).bundleRootIds ?? [])[0] as string;
  const oldRootKey = new X509Certificate(pemBlocks(((await readHeld(stateOf('east'))) as Held).bundle)[0] ?? '')
    .publicKey;

  // The rotation, sampled.
  const started = Date.now();
  await mesh.api('/api/v1/trust/rotate', undefined, { method: 'POST' });
  const samples: Sample[] = [];
  const phases: Array<{ phase: number; generation: number; atMs: number }> = [];
  let finished = false;
  while (!finished && Date.now() - started < 150_000) {
    const view = await trust();
    const phase = view.phase ?? 0;
    if (phases.at(-1)?.generation !== view.generation)
      phases.push({ phase, generation: view.generation ?? 0, atMs: Date.now() - started });
    const atMs = Date.now();
    const held = await Promise.all(CLUSTERS.map((c) => readHeld(stateOf(c))));
    if (held.every(Boolean)) samples.push({ atMs, phase, held: { east: held[0] as Held, west: held[1] as Held } });
    finished = phase === 0 && (view.bundleRootIds ?? []).length === 1 && view.bundleRootIds?.[0] !== oldRoot;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.diagnostic(`phases (ms after rotate): ${JSON.stringify(phases)}`);
  assert.ok(finished, `the rotation finishes; phases ${JSON.stringify(phases)}`);
  assert.deepEqual(
    phases.map((p) => p.phase),
    [1, 2, 3, 0],
    'each phase once, in order',
  );

  // Bundles (cacerts and workload files) change only by exact superset or subset.
  for (const cluster of CLUSTERS) {
    for (const pick of ['bundle', 'leafBundle'] as const) {
      const seen = samples.map((s) => rootIds(s.held[cluster][pick]));
      for (let i = 1; i < seen.length; i++) {
        const [prev, next] = [seen[i - 1] as string[], seen[i] as string[]];
        assert.ok(isExactBundleStep(prev, next), `${cluster} ${pick}: ${prev.join(',')} -> ${next.join(',')}`);
      }
    }
  }

  // Every distinct state: each leaf verifies against its own bundle and the other cluster's (cacerts and workload).
  const checked = new Set<string>();
  let verifications = 0;
  for (const sample of samples) {
    for (const from of CLUSTERS) {
      for (const to of CLUSTERS) {
        for (const bundle of [sample.held[to].leafBundle, sample.held[to].bundle]) {
          const key = createHash('sha256').update(sample.held[from].leafChain).update(bundle).digest('hex');
          if (checked.has(key)) continue;
          checked.add(key);
          verifications++;
          const failure = await verify(vdir, bundle, sample.held[from].leafChain, sample.atMs);
          assert.equal(failure, undefined, `phase ${sample.phase}: ${from}'s leaf against ${to}'s bundle`);
        }
      }
      const own = await verify(vdir, sample.held[from].bundle, sample.held[from].chain, sample.atMs);
      assert.equal(own, undefined, `phase ${sample.phase}: ${from}'s cacerts chain`);
    }
  }
  t.diagnostic(`${samples.length} samples, ${verifications} distinct leaf/bundle pairs verified`);
  const last = samples.at(-1) as Sample;
  const newRoot = rootIds(last.held.east.bundle);
  assert.equal(newRoot.length, 1);
  assert.notEqual(newRoot[0], oldRoot);
  for (const cluster of CLUSTERS) assert.deepEqual(rootIds(last.held[cluster].leafBundle), newRoot);
  // Phase 3 (the old root leaves the bundles) came only after every leaf issued under an old-root intermediate
  // expired: the agents reported until when those live.
  let lastOldLeaf = 0;
  for (const sample of samples)
    for (const cluster of CLUSTERS) {
      const [leaf, intermediate] = pemBlocks(sample.held[cluster].leafChain);
      if (new X509Certificate(intermediate ?? '').verify(oldRootKey))
        lastOldLeaf = Math.max(lastOldLeaf, Date.parse(new X509Certificate(leaf ?? '').validTo));
    }
  const phase3At = started + (phases.find((p) => p.phase === 3)?.atMs ?? 0);
  assert.ok(lastOldLeaf > started, 'old-root leaves were sampled during the rotation');
  assert.ok(phase3At >= lastOldLeaf, `phase 3 at ${phase3At}, last old-root leaf until ${lastOldLeaf}`);
  t.diagnostic(`phase 3 began ${phase3At - lastOldLeaf} ms after the last old-root leaf expired`);
  // What must fail does: a leaf from before the rotation, at its own time, against a bundle that dropped its root.
  const first = samples[0] as Sample;
  assert.match(
    (await verify(vdir, last.held.west.leafBundle, first.held.east.leafChain, first.atMs)) ?? 'verified',
    /unable to get (local )?issuer certificate|error/,
    'an old-root leaf is not trusted by a new-root-only bundle',
  );
});
