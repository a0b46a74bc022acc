// Two real meshrelay-server replicas started at the same moment on a fresh plane, with a
// RootTrustPolicy whose root is generated: both must end with one root. Twice: the file registry
// (a shared state directory and Redis, the policy from a file; the root in <stateDir>/mesh-ca) and
// the kubernetes registry (each replica its own state directory, the policy a CR, the root in the
// Secret meshrelay-mesh-root-ca-1, through the Kubernetes API test double).
//
// Each replica, in its first tick (before it logs "management server started"), finds no root,
// generates one (a 4096-bit RSA key, Gloo's default, so both are generating at the same time) and
// stores it through the mesh root store's createIfAbsent, then writes the plane's first trust state.
// If that store were not atomic (each replica writing its own root and keeping it):
// - when both wrote the first state before reading the other's, each replica's first view names the
//   root it generated, and the two GET /api/v1/trust answers right after the start differ;
// - when one read the other's state, both name the first root, but the store holds the root written
//   last, so the stored root is not the root in force (and a restarted replica could not sign).
// Either way an assertion below fails. A temporary file or a second root left behind fails the
// listing of the store.
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { rootIdOf } from '@meshrelay/certs';
import { MESH_NAMESPACE, Mesh, type MeshOptions } from './mesh.ts';

const POLICY = {
  apiVersion: 'admin.gloo.solo.io/v2',
  kind: 'RootTrustPolicy',
  metadata: { name: 'root', namespace: MESH_NAMESPACE },
  spec: { config: { mgmtServerCa: { generated: {} } } },
};
const ROUNDS = 3;

interface TrustView {
  readonly enabled: boolean;
  readonly problems: readonly string[];
  readonly roots: readonly { readonly id: string; readonly origin: string }[];
  readonly generation?: number;
}

/** How a plane is set up and where its mesh roots are kept. */
interface Variant {
  readonly name: string;
  readonly options: (scratch: string) => MeshOptions;
  readonly prepare: (mesh: Mesh) => void;
  /** The root certificates stored, by the name of what holds each; throws on anything else found there. */
  readonly storedRoots: (mesh: Mesh) => Promise<Map<string, string>>;
}

const FILE_REGISTRY: Variant = {
  name: 'the file registry',
  options: (scratch) => {
    const file = join(scratch, 'policy.json');
    writeFileSync(file, JSON.stringify(POLICY));
    return { serverFlags: ['--root-trust-policy', file] };
  },
  prepare: () => undefined,
  storedRoots: async (mesh) => {
    // The shared state directory the Mesh gives its file-registry servers.
    const meshCa = join(mesh.dir, 'server-state', 'mesh-ca');
    const roots = new Map<string, string>();
    for (const entry of await readdir(meshCa)) {
      assert.deepEqual(await readdir(join(meshCa, entry)), ['mesh-root-ca.json'], `files of ${entry}`);
      const stored = JSON.parse(await readFile(join(meshCa, entry, 'mesh-root-ca.json'), 'utf8')) as {
        certPem: string;
      };
      roots.set(entry, stored.certPem);
    }
    return roots;
  },
};

const KUBERNETES_REGISTRY: Variant = {
  name: 'the kubernetes registry',
  options: () => ({ registry: 'kubernetes' }),
  prepare: (mesh) => mesh.kube?.put(POLICY),
  storedRoots: (mesh) => {
    const roots = new Map<string, string>();
    for (const secret of mesh.kube?.objects('Secret', MESH_NAMESPACE) ?? []) {
      const name = secret.metadata.name ?? '';
      if (!name.startsWith('meshrelay-mesh-root-ca-')) continue;
      const data = secret['data'] as Record<string, string> | undefined;
      roots.set(name, Buffer.from(data?.['tls.crt'] ?? '', 'base64').toString('utf8'));
    }
    return Promise.resolve(roots);
  },
};

for (const [variant, firstRoot] of [
  [FILE_REGISTRY, 'root-1'],
  [KUBERNETES_REGISTRY, 'meshrelay-mesh-root-ca-1'],
] as const) {
  test(
    `given two replicas on ${variant.name} started at the same moment with a generated root, when each names its root, then there is one root, the one stored, in every round`,
    { timeout: 600_000 },
    async (t) => {
      const scratch = mkdtempSync(join(tmpdir(), 'meshrelay-root-replicas-'));
      t.after(() => rmSync(scratch, { recursive: true, force: true }));
      const seen = new Set<string>();
      for (let round = 1; round <= ROUNDS; round++) {
        await t.test(`round ${round}`, async (rt) => {
          const id = await oneRound(rt, variant, scratch, firstRoot);
          assert.ok(!seen.has(id), `round ${round} found the root of an earlier round: its state was not fresh`);
          seen.add(id);
        });
      }
    },
  );
}

/** One fresh plane: starts both replicas together and returns the one root id they name. */
async function oneRound(
  t: Parameters<typeof Mesh.start>[0],
  variant: Variant,
  scratch: string,
  firstRoot: string,
): Promise<string> {
  // The default trust tick (5 s) leaves each replica's view as its first tick made it while the
  // answers below are read, so a replica that kept a root of its own would still show it.
  const mesh = await Mesh.start(t, variant.options(scratch));
  variant.prepare(mesh);
  const replicas = await Promise.all([mesh.startServer('mgmt-0'), mesh.startServer('mgmt-1')]);
  const views = await Promise.all(replicas.map((server) => mesh.api<TrustView>('/api/v1/trust', server)));

  for (const [i, view] of views.entries()) {
    const name = replicas[i]?.name ?? '';
    assert.equal(view.enabled, true, `${name}: mesh trust is in force`);
    assert.deepEqual(view.problems, [], `${name}: problems`);
    assert.equal(view.generation, 1, `${name}: the first trust generation`);
    assert.deepEqual(
      view.roots.map((r) => r.origin),
      ['generated'],
      `${name} names ${view.roots.length} roots: ${JSON.stringify(view.roots)}`,
    );
  }
  const ids = new Set(views.map((v) => v.roots[0]?.id));
  assert.equal(ids.size, 1, `the replicas name different roots: ${[...ids].join(', ')}`);
  const id = [...ids][0] as string;

  const stored = await variant.storedRoots(mesh);
  assert.deepEqual([...stored.keys()], [firstRoot], 'mesh root store entries');
  assert.equal(rootIdOf(stored.get(firstRoot) ?? ''), id, 'the stored root is the root in force');
  return id;
}
