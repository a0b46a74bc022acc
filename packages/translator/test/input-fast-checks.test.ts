import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { KINDS, type Resource } from '@meshrelay/api';
import { buildNode, buildPod } from '@meshrelay/testkit';
import { quickCheckOf } from '../src/input-fast-checks.ts';
import { validateInputResource } from '../src/index.ts';
import { POD } from '../src/schemas/core.ts';

const pod = (): Resource => buildPod({ name: 'p', namespace: 'bookinfo', ip: '10.0.0.7', node: 'n1', serviceAccount: 'reviews' });
const podCheck = quickCheckOf(KINDS.Pod) as (r: object) => boolean;

/** The Pod schema on its own, as the input validator compiles it (same `ip` format). */
const schemaAccepts = new Ajv({ allErrors: true, strict: false }).addFormat('ip', (v: string) => isIP(v) !== 0).compile(POD);

/** Copies of a valid Pod with one field set to a value of another shape (`undefined` removes it). */
function variants(): [string, Resource][] {
  const values: [string, unknown][] = [
    ['a number', 7],
    ['null', null],
    ['a list', []],
    ['an object', {}],
    ['a name', 'x'],
    ['an IPv6 address', 'fd00::1'],
    ['absent', undefined],
  ];
  const paths: [string, (r: Record<string, Record<string, unknown>>, v: unknown) => void][] = [
    ['spec', (r, v) => void (r['spec'] = v as Record<string, unknown>)],
    ['status', (r, v) => void (r['status'] = v as Record<string, unknown>)],
    ['spec.nodeName', (r, v) => void ((r['spec'] as Record<string, unknown>)['nodeName'] = v)],
    ['spec.serviceAccountName', (r, v) => void ((r['spec'] as Record<string, unknown>)['serviceAccountName'] = v)],
    ['status.phase', (r, v) => void ((r['status'] as Record<string, unknown>)['phase'] = v)],
    ['status.podIP', (r, v) => void ((r['status'] as Record<string, unknown>)['podIP'] = v)],
    ['status.podIPs', (r, v) => void ((r['status'] as Record<string, unknown>)['podIPs'] = v)],
    ['status.podIPs[0]', (r, v) => void ((r['status'] as Record<string, unknown[]>)['podIPs'] as unknown[]).splice(0, 1, v)],
    ['status.podIPs[0].ip', (r, v) => void ((((r['status'] as Record<string, unknown[]>)['podIPs'] as unknown[])[0] as Record<string, unknown>)['ip'] = v)],
  ];
  const out: [string, Resource][] = [];
  for (const [path, set] of paths) {
    for (const [what, value] of values) {
      const copy = structuredClone(pod()) as unknown as Record<string, Record<string, unknown>>;
      set(copy, value);
      out.push([`${path} ${what}`, copy as unknown as Resource]);
    }
  }
  return out;
}

describe('quick input checks', () => {
  it('given a Pod as discovery reports it, when quick-checked, then it is accepted without the schema', () => {
    assert.equal(podCheck(pod()), true);
  });

  it('given a Node, when quick-checked, then it is accepted (only its metadata can be wrong)', () => {
    assert.equal((quickCheckOf(KINDS.Node) as (r: object) => boolean)(buildNode({ name: 'n1', zone: 'z' })), true);
  });

  it('given Pods with one field of every other shape, when quick-checked, then each one it accepts the Pod schema accepts too', () => {
    const unsound = variants().filter(([, r]) => podCheck(r) && !schemaAccepts(r));
    assert.deepEqual(
      unsound.map(([what]) => what),
      [],
    );
  });

  it('given a Pod with an address that is not an IP, when validated, then the schema names the field', () => {
    const bad = structuredClone(pod()) as unknown as { status: { podIPs: { ip: string }[] } };
    (bad.status.podIPs[0] as { ip: string }).ip = 'not-an-ip';
    const problems = validateInputResource(bad as unknown as Resource);
    assert.ok(problems.some((p) => p.path === 'status.podIPs[0].ip'), JSON.stringify(problems));
  });
});
