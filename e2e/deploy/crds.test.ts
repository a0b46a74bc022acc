// The CRDs in the chart: generated from the translator's schemas and up to date, structural, valid
// CustomResourceDefinitions, and admitting exactly what the translator admits (bar unknown fields,
// which a CRD prunes instead of refusing).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { INPUT_KINDS, KINDS, type Resource } from '@meshrelay/api';
import { ROOT_TRUST_POLICY_API, parseRootTrustPolicy } from '@meshrelay/registry';
import { validateInputResource } from '@meshrelay/translator';
import { compileCrdSchema, structuralProblems } from './crd-schema.ts';
import { CHART, ROOT, objectsOfKind, renderChart } from './helm-runner.ts';
import { kubeProblems } from './kube-checks.ts';

type Json = Record<string, unknown>;
const CRD_DIR = join(CHART, 'crds');

interface CrdVersion {
  name: string;
  subresources?: Json;
  additionalPrinterColumns?: Json[];
  schema: { openAPIV3Schema: Json };
}
interface Crd {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: { group: string; scope: string; names: { kind: string; plural: string }; versions: CrdVersion[] };
}

function crdFiles(): Map<string, Crd> {
  const files = readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml'));
  return new Map(files.map((f) => [f, parse(readFileSync(join(CRD_DIR, f), 'utf8')) as Crd]));
}

function crdFor(apiVersion: string, kind: string): Crd {
  const [group, version] = apiVersion.split('/');
  const crd = [...crdFiles().values()].find(
    (c) => c.spec.group === group && c.spec.names.kind === kind && c.spec.versions.some((v) => v.name === version),
  );
  if (!crd) throw new Error(`no CRD for ${apiVersion} ${kind}`);
  return crd;
}

function admittedByCrd(resource: Json): boolean {
  const crd = crdFor(String(resource['apiVersion']), String(resource['kind']));
  const validate = compileCrdSchema(crd.spec.versions[0]?.schema.openAPIV3Schema ?? {});
  return validate(resource) === true;
}

function exampleGlooResources(): Json[] {
  const out: Json[] = [];
  for (const cluster of ['cluster-a', 'cluster-b']) {
    const dir = join(ROOT, 'examples', cluster);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
        const value = doc.toJS() as Json | null;
        if (value && String(value['apiVersion']).includes('.gloo.solo.io/')) out.push(value);
      }
    }
  }
  return out;
}

function genCrds(args: readonly string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'scripts/gen-crds.ts'), ...args], { cwd: ROOT }, (err, stdout, stderr) =>
      resolve({ code: err ? 1 : 0, out: stdout + stderr }),
    );
  });
}

test("given the committed CRDs, when gen-crds --check runs, then they match the translator's schemas", async () => {
  const run = await genCrds(['--check']);
  assert.equal(run.code, 0, run.out);
  assert.match(run.out, /18 CRDs are up to date/);
});

test('given a copy of the CRDs with one edited and one removed, when gen-crds --check runs on it, then it fails naming both', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-crds-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(CRD_DIR, dir, { recursive: true });
  const edited = join(dir, 'networking.gloo.solo.io_virtualdestinations.yaml');
  writeFileSync(edited, readFileSync(edited, 'utf8').replace('maximum: 65535', 'maximum: 65536'));
  rmSync(join(dir, 'security.policy.gloo.solo.io_accesspolicies.yaml'));
  const run = await genCrds(['--check', '--dir', dir]);
  assert.equal(run.code, 1, run.out);
  assert.match(run.out, /networking\.gloo\.solo\.io_virtualdestinations\.yaml is stale/);
  assert.match(run.out, /security\.policy\.gloo\.solo\.io_accesspolicies\.yaml is missing/);
});

test('given schemas Kubernetes refuses, when the structural check runs, then it names each problem', () => {
  assert.match(
    structuralProblems({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false }).join(),
    /mutually exclusive/,
  );
  assert.match(
    structuralProblems({ type: 'object', properties: { kind: { enum: ['A', 'B'] } } }).join(),
    /\$\.kind: needs a type/,
  );
  assert.match(
    structuralProblems({ type: 'object', oneOf: [{ type: 'object', required: ['a'] }] }).join(),
    /"type" is not allowed inside a logical junctor/,
  );
  assert.match(
    structuralProblems({ type: 'object', properties: { p: { type: 'integer', if: { minimum: 1 } } } }).join(),
    /\$\.p: "if" is not allowed/,
  );
});

test('given every CRD file, when checked as a Kubernetes object, then each is a valid CustomResourceDefinition with a structural schema', () => {
  for (const [file, crd] of crdFiles()) {
    assert.deepEqual(kubeProblems([crd as unknown as Parameters<typeof kubeProblems>[0][number]]), [], file);
    assert.equal(crd.metadata.name, `${crd.spec.names.plural}.${crd.spec.group}`, file);
    for (const version of crd.spec.versions)
      assert.deepEqual(structuralProblems(version.schema.openAPIV3Schema), [], `${file} ${version.name}`);
  }
});

test('given the kinds the translator reads and the management plane kinds, when the CRDs are listed, then each has exactly one CRD of the right scope', () => {
  const rootTrustPolicy = {
    apiVersion: `${ROOT_TRUST_POLICY_API.group}/${ROOT_TRUST_POLICY_API.version}`,
    kind: ROOT_TRUST_POLICY_API.kind,
    namespaced: true,
  };
  const glooKinds = [
    ...INPUT_KINDS.filter((k) => k.apiVersion.includes('.gloo.solo.io/')),
    KINDS.KubernetesCluster,
    rootTrustPolicy,
  ];
  for (const kind of glooKinds)
    assert.equal(crdFor(kind.apiVersion, kind.kind).spec.scope, kind.namespaced ? 'Namespaced' : 'Cluster', kind.kind);
  assert.equal(crdFiles().size, glooKinds.length);
});

test('given the chart, when helm renders it with CRDs, then every CRD is included', async () => {
  const crds = objectsOfKind(await renderChart({}, { includeCrds: true }), 'CustomResourceDefinition');
  assert.deepEqual(
    crds.map((c) => c.metadata.name).sort(),
    [...crdFiles().values()].map((c) => c.metadata.name).sort(),
  );
});

test('given the KubernetesCluster CRD, when inspected, then it has a status subresource, a Warm column and typed conditions', () => {
  const version = crdFor(KINDS.KubernetesCluster.apiVersion, 'KubernetesCluster').spec.versions[0];
  assert.deepEqual(version?.subresources, { status: {} });
  const warm = version?.additionalPrinterColumns?.find((c) => c['name'] === 'Warm');
  assert.equal(warm?.['jsonPath'], '.status.conditions[?(@.type=="ClusterWarm")].status');
  const cluster = {
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'KubernetesCluster',
    metadata: { name: 'cluster-a', namespace: 'gloo-mesh' },
    spec: { clusterDomain: 'cluster.local', skipWarming: false },
    status: {
      conditions: [
        {
          type: 'ClusterWarm',
          status: 'False',
          reason: 'ClusterRegistered',
          message: 'waiting for the first input',
          lastTransitionTime: '2026-11-22T00:00:00Z',
        },
      ],
    },
  };
  assert.equal(admittedByCrd(cluster), true);
  assert.equal(
    admittedByCrd({ ...cluster, status: { conditions: [{ type: 'ClusterWarm', status: 'Maybe' }] } }),
    false,
  );
  assert.equal(admittedByCrd({ ...cluster, spec: { skipWarming: 'yes' } }), false);
});

test('given KubernetesCluster CRs whose clusterDomain is not a DNS name, when validated against the CRD, then the API server schema refuses them', () => {
  const cluster = (clusterDomain: string) => ({
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'KubernetesCluster',
    metadata: { name: 'east', namespace: 'gloo-mesh' },
    spec: { clusterDomain },
  });
  assert.equal(admittedByCrd(cluster('cluster.local')), true);
  assert.equal(admittedByCrd(cluster('evil domain\n<b>x</b>')), false);
  assert.equal(admittedByCrd(cluster(`${'a'.repeat(64)}.local`)), false, 'a label over 63');
  assert.equal(admittedByCrd(cluster(`${'a.'.repeat(127)}ab`)), false, 'over 253 characters');
  assert.equal(admittedByCrd(cluster('Cluster.Local')), false, 'capitals');
});

test('given the example Gloo resources, when validated against their CRDs, then the API server schema admits every one', () => {
  const examples = exampleGlooResources();
  assert.ok(examples.length >= 6, `only ${examples.length} examples found`);
  for (const resource of examples)
    assert.equal(admittedByCrd(resource), true, `${String(resource['kind'])} ${JSON.stringify(resource['metadata'])}`);
});

/** Breaks one example of the kind; the translator must refuse the result. */
const BREAKAGES: readonly (readonly [kind: string, what: string, breakSpec: (spec: Json) => void])[] = [
  [
    'VirtualDestination',
    'a port above 65535',
    (s) => {
      ((s['ports'] as Json[])[0] as Json)['number'] = 70000;
    },
  ],
  [
    'VirtualDestination',
    'no hosts',
    (s) => {
      s['hosts'] = [];
    },
  ],
  [
    'VirtualDestination',
    'an unknown protocol',
    (s) => {
      ((s['ports'] as Json[])[0] as Json)['protocol'] = 'SMTP';
    },
  ],
  [
    'RouteTable',
    'a route name with capitals',
    (s) => {
      ((s['http'] as Json[])[0] as Json)['name'] = 'Reviews_API';
    },
  ],
  [
    'RouteTable',
    'a uri matcher with two kinds of match',
    (s) => {
      (((s['http'] as Json[])[0] as Json)['matchers'] as Json[])[0] = { uri: { prefix: '/a', exact: '/a' } };
    },
  ],
  [
    'AccessPolicy',
    'no config',
    (s) => {
      delete s['config'];
    },
  ],
  [
    'FailoverPolicy',
    'both locality mappings and priority labels',
    (s) => {
      (s['config'] as Json)['localityMappings'] = [];
      (s['config'] as Json)['priorityLabels'] = { labels: ['a'] };
    },
  ],
  [
    'OutlierDetectionPolicy',
    'a duration in words',
    (s) => {
      (s['config'] as Json)['interval'] = 'ten seconds';
    },
  ],
  [
    'RetryTimeoutPolicy',
    'a config with neither retries nor a timeout',
    (s) => {
      s['config'] = {};
    },
  ],
];

for (const [kind, what, breakSpec] of BREAKAGES) {
  test(`given an example ${kind} broken by ${what}, when validated, then both the translator and the CRD refuse it`, () => {
    const example = exampleGlooResources().find((r) => r['kind'] === kind);
    assert.ok(example, `no example ${kind}`);
    assert.equal(admittedByCrd(example), true, 'the unbroken example must pass');
    const broken = structuredClone(example);
    breakSpec(broken['spec'] as Json);
    assert.notDeepEqual(validateInputResource(broken as unknown as Resource), [], 'the translator accepted it');
    assert.equal(admittedByCrd(broken), false, 'the CRD accepted it');
  });
}

/** The RootTrustPolicy of docs/operating/mesh-trust.md, as an operator would apply it. */
function documentedRootTrustPolicy(): Json {
  const doc = readFileSync(join(ROOT, 'docs/operating/mesh-trust.md'), 'utf8');
  const block = /```yaml\n(apiVersion: admin\.gloo\.solo\.io\/v2\nkind: RootTrustPolicy\n[\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(block, 'docs/operating/mesh-trust.md shows no RootTrustPolicy');
  return parse(block) as Json;
}

test('given the RootTrustPolicy CRD, when inspected, then it is the kind the server watches, with a status subresource and columns', () => {
  const crd = crdFor('admin.gloo.solo.io/v2', 'RootTrustPolicy');
  assert.equal(crd.spec.names.plural, ROOT_TRUST_POLICY_API.plural);
  const version = crd.spec.versions[0];
  assert.deepEqual(version?.subresources, { status: {} });
  assert.deepEqual(
    version?.additionalPrinterColumns?.map((c) => c['jsonPath']),
    ['.status.state', '.status.phase', '.status.trustGeneration', '.metadata.creationTimestamp'],
  );
});

test('given the documented RootTrustPolicy and the status the server writes, when validated against the CRD, then both are admitted', () => {
  const policy = documentedRootTrustPolicy();
  assert.ok('value' in parseRootTrustPolicy(policy), 'the management server refuses the documented policy');
  assert.equal(admittedByCrd(policy), true);
  // The shape policyStatus() in the management server writes, with observedGeneration added.
  const status = {
    state: 'ACCEPTED',
    activeRoots: [{ id: '0123456789abcdef', origin: 'generated', notAfter: '2027-11-29T00:00:00.000Z' }],
    trustGeneration: 3,
    phase: 2,
    phaseSince: '2026-11-29T05:00:00.000Z',
    clusters: { east: { appliedGeneration: 3, phase: 2 }, west: { appliedGeneration: 2, phase: 1 } },
    holds: [{ kind: 'cluster', cluster: 'west', appliedGeneration: 2, since: '2026-11-29T05:00:00.000Z' }],
    problems: [],
    observedGeneration: 1,
  };
  assert.equal(admittedByCrd({ ...policy, status }), true);
  assert.equal(admittedByCrd({ ...policy, status: { ...status, phase: 4 } }), false, 'a phase beyond 3');
  assert.equal(admittedByCrd({ ...policy, status: { ...status, state: 'FINE' } }), false, 'an unknown state');
});

function propertiesAt(schema: Json, path: readonly string[]): Json {
  let node = schema;
  for (const name of path) node = (node['properties'] as Record<string, Json>)[name] ?? {};
  return (node['properties'] ?? {}) as Json;
}

/** Edits of the documented policy's spec.config, and whether the management server accepts the result. */
const ROOT_TRUST_EDITS: readonly (readonly [what: string, accepted: boolean, config: Json])[] = [
  ['no config at all (a generated root)', true, {}],
  ['a secretRef with a namespace', true, { mgmtServerCa: { secretRef: { name: 'root-ca', namespace: 'certs' } } }],
  ['every cert option at its bounds', true, { intermediateCertOptions: bounds(1, 2048, 'acme', 0.01) }],
  ['the largest cert options', true, { mgmtServerCa: { generated: bounds(36_500, 8192, 'a', 0.99) } }],
  ['autoRestartPods', true, { autoRestartPods: true }],
  ['both generated and secretRef', false, { mgmtServerCa: { generated: {}, secretRef: { name: 'root-ca' } } }],
  ['a secretRef without a name', false, { mgmtServerCa: { secretRef: { namespace: 'certs' } } }],
  ['a secretRef with an empty name', false, { mgmtServerCa: { secretRef: { name: '' } } }],
  ['ttlDays 0', false, { intermediateCertOptions: { ttlDays: 0 } }],
  ['ttlDays over a hundred years', false, { intermediateCertOptions: { ttlDays: 36_501 } }],
  ['a fractional ttlDays', false, { intermediateCertOptions: { ttlDays: 1.5 } }],
  ['a 1024-bit key', false, { mgmtServerCa: { generated: { rsaKeySizeBytes: 1024 } } }],
  ['a 16384-bit key', false, { intermediateCertOptions: { rsaKeySizeBytes: 16_384 } }],
  ['a blank orgName', false, { intermediateCertOptions: { orgName: '   ' } }],
  ['an empty orgName', false, { intermediateCertOptions: { orgName: '' } }],
  ['a grace ratio of 0', false, { intermediateCertOptions: { secretRotationGracePeriodRatio: 0 } }],
  ['a grace ratio of 1', false, { intermediateCertOptions: { secretRotationGracePeriodRatio: 1 } }],
  ['autoRestartPods as a string', false, { autoRestartPods: 'yes' }],
];

function bounds(ttlDays: number, rsaKeySizeBytes: number, orgName: string, ratio: number): Json {
  return { ttlDays, rsaKeySizeBytes, orgName, secretRotationGracePeriodRatio: ratio };
}

for (const [what, accepted, config] of ROOT_TRUST_EDITS) {
  test(`given a RootTrustPolicy with ${what}, when validated, then the CRD and the management server ${accepted ? 'both accept' : 'both refuse'} it`, () => {
    const policy = { ...documentedRootTrustPolicy(), spec: { config } };
    assert.equal('value' in parseRootTrustPolicy(policy), accepted, 'the management server');
    assert.equal(admittedByCrd(policy), accepted, 'the CRD');
  });
}

test('given a RootTrustPolicy with an agent CA or passive CAs, when admitted by the CRD, then the fields are kept and the management server refuses it naming them', () => {
  for (const [field, value] of [
    ['agentCa', { vault: { server: 'https://vault:8200' } }],
    ['passiveCertificateAuthorities', [{ generated: {} }]],
  ] as const) {
    const policy = { ...documentedRootTrustPolicy(), spec: { config: { [field]: value } } };
    assert.equal(admittedByCrd(policy), true, field);
    const parsed = parseRootTrustPolicy(policy);
    assert.ok('problem' in parsed && parsed.problem.includes(`spec.config.${field}`), JSON.stringify(parsed));
    // Declared in the schema, so the API server's pruning does not drop them before the server reads them.
    const schema = crdFor('admin.gloo.solo.io/v2', 'RootTrustPolicy').spec.versions[0]?.schema.openAPIV3Schema;
    const fields = Object.keys(propertiesAt(schema ?? {}, ['spec', 'config']));
    assert.ok(fields.includes(field), `${field} not among ${fields.join(', ')}`);
  }
});
