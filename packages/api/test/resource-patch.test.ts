import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyResourcePatch,
  canonicalJson,
  resourceId,
  resourcePatch,
  resourcePatchOps,
  type Resource,
} from '../src/index.ts';
import { random } from './support/seeded-random.ts';

interface Endpoint {
  address: string;
  labels: Record<string, string>;
  locality?: string;
  network?: string;
  ports: Record<string, number>;
  weight?: number;
}

/** A ServiceEntry shaped as the translator builds them for an exported service: one endpoint per remote pod. */
function serviceEntry(
  endpoints: number,
): Resource & { spec: { endpoints: Endpoint[]; hosts: string[]; [field: string]: unknown } } {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: {
      name: 'vd-svc-000',
      namespace: 'istio-system',
      labels: { 'meshrelay.io/virtual-destination': 'svc-000' },
      annotations: { 'meshrelay.io/sources': 'a,b,c' },
    },
    spec: {
      hosts: ['svc-000.global'],
      addresses: ['240.0.0.1'],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ name: 'http', number: 8080, protocol: 'HTTP' }],
      endpoints: Array.from({ length: endpoints }, (_, i) => ({
        address: `10.${Math.floor(i / 250)}.${i % 250}.7`,
        labels: { app: 'svc-000', cluster: `cluster-${i % 50}` },
        locality: `region-${i % 3}/zone-${i % 5}`,
        network: `net-${i % 50}`,
        ports: { http: 15443 },
      })),
    },
  };
}

/** One random edit of the kinds a re-translation makes: endpoints change, go, come; labels, hosts, ports change. */
function mutate(r: ReturnType<typeof serviceEntry>, rnd: (n: number) => number, step: number): void {
  const eps = r.spec.endpoints;
  const at = rnd(eps.length + 1);
  switch (rnd(11)) {
    case 0:
      if (eps.length > 0) eps.splice(Math.min(at, eps.length - 1), 1);
      break;
    case 1:
      eps.splice(at, 0, {
        address: `10.9.${step % 250}.${rnd(250)}`,
        labels: { app: 'svc-000' },
        ports: { http: 15443 },
      });
      break;
    case 2: {
      const e = eps[Math.min(at, eps.length - 1)];
      if (e) e.labels = { ...e.labels, 'security.istio.io/tlsMode': 'istio' };
      break;
    }
    case 3: {
      const e = eps[Math.min(at, eps.length - 1)];
      if (e) delete e.locality;
      break;
    }
    case 4: {
      const e = eps[Math.min(at, eps.length - 1)];
      if (e) e.weight = 1 + rnd(100);
      break;
    }
    case 5:
      r.spec.hosts.push(`alias-${step}.global`);
      break;
    case 6:
      (r.metadata.annotations as Record<string, string>)['meshrelay.io/sources'] = `a,b,c,${step}`;
      break;
    case 7:
      eps.splice(at, Math.min(1 + rnd(5), eps.length - at));
      break;
    // An endpoint whose address changed sorts elsewhere: it leaves one place and comes back at another.
    case 8: {
      const [e] = eps.splice(Math.min(at, eps.length - 1), 1);
      if (e) eps.splice(rnd(eps.length + 1), 0, { ...e, address: `10.99.${step}.${rnd(250)}` });
      break;
    }
    // Many items replaced at once: more than an alignment is searched for.
    case 9:
      for (let i = 0; i < eps.length; i += 1 + rnd(2)) (eps[i] as Endpoint).network = `moved-${step}`;
      break;
    default: {
      const e = eps[Math.min(at, eps.length - 1)];
      if (e) e.ports = { 'http~1/x': step };
      break;
    }
  }
}

test('given random edits of a ServiceEntry, when the patch between any two versions is applied to the first, then the result has the canonical encoding of the second', async () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rnd = random(seed);
    const base = serviceEntry(20 + rnd(60));
    const next = structuredClone(base);
    const edits = 1 + rnd(6);
    for (let step = 0; step < edits; step++) mutate(next, rnd, step);
    const patched = await applyResourcePatch(Object.freeze(base), {
      key: resourceId(next),
      ops: resourcePatchOps(base, next),
    });
    assert.equal(canonicalJson(patched), canonicalJson(next), `seed ${seed}`);
  }
});

test('given a 500-endpoint ServiceEntry, when one endpoint in the middle goes, then its patch is one operation, far smaller than the resource', async () => {
  const base = serviceEntry(500);
  const next = structuredClone(base);
  next.spec.endpoints.splice(250, 1);
  const patch = resourcePatch(base, next, canonicalJson(next));
  assert.ok(patch);
  assert.deepEqual(JSON.parse(patch.ops), [{ op: 'remove', path: '/spec/endpoints/250' }]);
  assert.equal(canonicalJson(await applyResourcePatch(base, patch)), canonicalJson(next));
});

test("given a 500-endpoint ServiceEntry, when one endpoint's address changes so that it sorts 390 places later, then its patch removes it and adds it back (two operations, not one per endpoint passed)", async () => {
  const base = serviceEntry(500);
  const next = structuredClone(base);
  const [moved] = next.spec.endpoints.splice(10, 1);
  next.spec.endpoints.splice(400, 0, { ...(moved as Endpoint), address: '10.99.0.1' });
  const patch = resourcePatch(base, next, canonicalJson(next));
  assert.ok(patch);
  assert.deepEqual(
    (JSON.parse(patch.ops) as { op: string; path: string }[]).map((o) => `${o.op} ${o.path}`),
    ['remove /spec/endpoints/10', 'add /spec/endpoints/400'],
  );
  assert.equal(canonicalJson(await applyResourcePatch(base, patch)), canonicalJson(next));
});

test('given a resource replaced by an unrelated one, when a patch is asked for, then there is none (the patch is not smaller than the resource)', () => {
  const base = serviceEntry(3);
  const next = { ...serviceEntry(0), spec: { hosts: ['other.global'] } };
  assert.equal(resourcePatch(base, next, canonicalJson(next)), undefined);
});

for (const [name, ops] of [
  ['operations that are not JSON', '[{"op":'],
  ['operations that are not an array', '{"op":"remove","path":"/spec"}'],
  ['a path the base does not have', '[{"op":"replace","path":"/spec/endpoints/7/address","value":"10.0.0.1"}]'],
  ['a failed test operation', '[{"op":"test","path":"/spec/location","value":"MESH_EXTERNAL"}]'],
  ['a prototype member', '[{"op":"add","path":"/__proto__/polluted","value":true}]'],
  ['a result with another key', '[{"op":"replace","path":"/metadata/name","value":"other"}]'],
  ['a result that is not a resource', '[{"op":"remove","path":"/kind"}]'],
] as const) {
  test(`given a patch with ${name}, when it is applied, then it is refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH and the base is unchanged`, async () => {
    const base = serviceEntry(2);
    const before = canonicalJson(base);
    await assert.rejects(applyResourcePatch(base, { key: resourceId(base), ops }), {
      code: 'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
    });
    assert.equal(canonicalJson(base), before);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });
}
