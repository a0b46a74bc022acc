import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { KINDS, type KindRef, type Resource } from '@meshrelay/api';
import { buildEndpointSlice, buildNode, buildPod, buildService } from '@meshrelay/testkit';
import { quickCheckOf } from '../src/gloo/input-fast-checks.ts';
import { validateInputResource } from '../src/index.ts';
import { ENDPOINT_SLICE, POD, SERVICE } from '../src/gloo/schemas/core.ts';
import type { JsonSchema } from '../src/gloo/schemas/gloo-common.ts';

const pod = (): Resource =>
  buildPod({ name: 'p', namespace: 'bookinfo', ip: '10.0.0.7', node: 'n1', serviceAccount: 'reviews' });
const podCheck = quickCheckOf(KINDS.Pod) as (r: object) => boolean;

/** The schemas on their own, as the input validator compiles them (same `ip` format). */
const ajv = new Ajv({ allErrors: true, strict: false }).addFormat('ip', (v: string) => isIP(v) !== 0);

/** Sets `path` (dot/bracket notation) in `r`, creating nothing: a missing parent leaves `r` as it is. */
function setPath(r: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let node: unknown = r;
  for (const key of keys.slice(0, -1))
    node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined;
  if (typeof node === 'object' && node !== null)
    (node as Record<string, unknown>)[keys[keys.length - 1] as string] = value;
}

const VALUES: [string, unknown][] = [
  ['a number', 7],
  ['a fraction', 7.5],
  ['0', 0],
  ['70000', 70000],
  ['true', true],
  ['null', null],
  ['a list', []],
  ['a list of a number', [1]],
  ['an object', {}],
  ['a name', 'x'],
  ['an empty string', ''],
  ['an IPv6 address', 'fd00::1'],
  ['absent', undefined],
];

/** Copies of `base` with one field at each of `paths` set to a value of another shape. */
function variants(base: Resource, paths: readonly string[]): [string, Resource][] {
  const out: [string, Resource][] = [];
  for (const path of paths) {
    for (const [what, value] of VALUES) {
      const copy = structuredClone(base) as unknown as Record<string, unknown>;
      setPath(copy, path, value);
      out.push([`${path} ${what}`, copy as unknown as Resource]);
    }
  }
  return out;
}

const POD_PATHS = [
  'spec',
  'status',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.phase',
  'status.podIP',
  'status.podIPs',
  'status.podIPs[0]',
  'status.podIPs[0].ip',
];
const slice = (): Resource =>
  buildEndpointSlice({
    service: 'reviews',
    namespace: 'bookinfo',
    ports: [{ name: 'http', port: 9080 }],
    endpoints: [{ ip: '10.0.0.1', pod: 'p', node: 'n' }],
  });
const SLICE_PATHS = [
  'addressType',
  'endpoints',
  'endpoints[0]',
  'endpoints[0].addresses',
  'endpoints[0].addresses[0]',
  'endpoints[0].conditions',
  'endpoints[0].conditions.ready',
  'endpoints[0].conditions.serving',
  'endpoints[0].conditions.terminating',
  'endpoints[0].nodeName',
  'endpoints[0].zone',
  'endpoints[0].targetRef',
  'endpoints[0].targetRef.kind',
  'endpoints[0].targetRef.name',
  'endpoints[0].targetRef.namespace',
  'ports',
  'ports[0]',
  'ports[0].name',
  'ports[0].port',
  'ports[0].protocol',
];
const service = (): Resource => {
  const r = buildService({
    name: 'reviews',
    namespace: 'bookinfo',
    ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
    selector: { app: 'reviews' },
  }) as unknown as Record<string, Record<string, unknown>>;
  (r['spec'] as Record<string, unknown>)['externalIPs'] = ['192.0.2.1'];
  (r['spec'] as Record<string, unknown>)['type'] = 'LoadBalancer';
  r['status'] = { loadBalancer: { ingress: [{ ip: '192.0.2.2', hostname: 'lb.example' }] } };
  return r as unknown as Resource;
};
const SERVICE_PATHS = [
  'spec',
  'spec.ports',
  'spec.ports[0]',
  'spec.ports[0].name',
  'spec.ports[0].port',
  'spec.ports[0].targetPort',
  'spec.ports[0].protocol',
  'spec.selector',
  'spec.selector.app',
  'spec.type',
  'spec.externalIPs',
  'spec.externalIPs[0]',
  'status',
  'status.loadBalancer',
  'status.loadBalancer.ingress',
  'status.loadBalancer.ingress[0]',
  'status.loadBalancer.ingress[0].ip',
  'status.loadBalancer.ingress[0].hostname',
];

describe('quick input checks', () => {
  it('given a Pod as discovery reports it, when quick-checked, then it is accepted without the schema', () => {
    assert.equal(podCheck(pod()), true);
  });

  it('given a Node, when quick-checked, then it is accepted (only its metadata can be wrong)', () => {
    assert.equal((quickCheckOf(KINDS.Node) as (r: object) => boolean)(buildNode({ name: 'n1', zone: 'z' })), true);
  });

  const kinds: [string, KindRef, JsonSchema, Resource, readonly string[]][] = [
    ['Pods', KINDS.Pod, POD, pod(), POD_PATHS],
    ['EndpointSlices', KINDS.EndpointSlice, ENDPOINT_SLICE, slice(), SLICE_PATHS],
    ['Services', KINDS.Service, SERVICE, service(), SERVICE_PATHS],
  ];
  for (const [what, kind, schema, base, paths] of kinds) {
    it(`given ${what} with one field of every other shape, when quick-checked, then each one it accepts the schema accepts too`, () => {
      const check = quickCheckOf(kind) as (r: object) => boolean;
      const schemaAccepts = ajv.compile(schema);
      assert.equal(check(base), true, 'the usual shape is accepted');
      const unsound = variants(base, paths).filter(([, r]) => check(r) && !schemaAccepts(r));
      assert.deepEqual(
        unsound.map(([name]) => name),
        [],
      );
    });
  }

  it('given a Pod with an address that is not an IP, when validated, then the schema names the field', () => {
    const bad = structuredClone(pod()) as unknown as { status: { podIPs: { ip: string }[] } };
    (bad.status.podIPs[0] as { ip: string }).ip = 'not-an-ip';
    const problems = validateInputResource(bad as unknown as Resource);
    assert.ok(
      problems.some((p) => p.path === 'status.podIPs[0].ip'),
      JSON.stringify(problems),
    );
  });
});
