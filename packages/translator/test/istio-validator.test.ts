import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { OWNER_LABEL, OWNER_LABEL_VALUE, canonicalConcat, canonicalPart, type Resource } from '@meshrelay/api';
import { createIstioValidator } from '../src/index.ts';

const validator = createIstioValidator();
const metadata = { name: 'reviews-global-vd', namespace: 'bookinfo', labels: { [OWNER_LABEL]: OWNER_LABEL_VALUE } };

function serviceEntry(spec: Record<string, unknown> = {}): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata,
    spec: {
      hosts: ['reviews.global'],
      addresses: ['10.30.0.7'],
      ports: [{ number: 9080, name: 'http-9080', protocol: 'HTTP' }],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      endpoints: [
        { address: '10.1.1.11', ports: { 'http-9080': 9080 }, locality: 'us-east/us-east-1a', network: 'cluster-a' },
      ],
      ...spec,
    },
  };
}

const valid: [string, Resource][] = [
  ['a ServiceEntry', serviceEntry()],
  [
    'a DestinationRule',
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata,
      spec: { host: 'reviews.global', trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } },
    },
  ],
  [
    'a VirtualService',
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata,
      spec: {
        hosts: ['reviews.global'],
        http: [
          {
            match: [{ uri: { prefix: '/' } }],
            route: [{ destination: { host: 'reviews.global', port: { number: 9080 } } }],
            timeout: '5s',
          },
        ],
      },
    },
  ],
  [
    'an AuthorizationPolicy',
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata,
      spec: {
        action: 'ALLOW',
        selector: { matchLabels: { app: 'reviews' } },
        rules: [{ from: [{ source: { principals: ['cluster-a/ns/bookinfo/sa/x'] } }] }],
      },
    },
  ],
];

describe('createIstioValidator', () => {
  for (const [what, r] of valid) {
    it(`given ${what} that Istio accepts, when validated, then no problem is reported`, () => {
      assert.deepEqual(validator.validate(r), []);
    });
  }

  it('given a ServiceEntry with an unknown spec field, when validated, then the field is rejected', () => {
    assert.deepEqual(validator.validate(serviceEntry({ resolutionMode: 'STATIC' })), [
      'spec.resolutionMode: unknown field',
    ]);
  });

  it('given a ServiceEntry with an unknown field in a nested object, when validated, then the field is rejected', () => {
    const r = serviceEntry({ endpoints: [{ address: '10.0.0.1', zone: 'a' }] });
    assert.deepEqual(validator.validate(r), ['spec.endpoints[0].zone: unknown field']);
  });

  it('given a ServiceEntry with a bad enum value, when validated, then the enum is rejected', () => {
    const problems = validator.validate(serviceEntry({ location: 'MESH_EVERYWHERE' }));
    assert.deepEqual(problems, ['spec.location: must be one of MESH_EXTERNAL, MESH_INTERNAL']);
  });

  it('given a ServiceEntry with a port above 65535, when validated, then the port is rejected', () => {
    const problems = validator.validate(serviceEntry({ ports: [{ number: 70000, name: 'http', protocol: 'HTTP' }] }));
    assert.deepEqual(problems, ['spec.ports[0].number: port must be between 1 and 65535']);
  });

  it('given an endpoint port of 0, when validated, then the port is rejected', () => {
    const problems = validator.validate(
      serviceEntry({ endpoints: [{ address: '10.0.0.1', ports: { 'http-9080': 0 } }] }),
    );
    assert.deepEqual(problems, ['spec.endpoints[0].ports["http-9080"]: port must be between 1 and 65535']);
  });

  it('given a resource whose name is not a DNS-1123 subdomain, when validated, then the name is rejected', () => {
    const r = { ...serviceEntry(), metadata: { ...metadata, name: 'Reviews' } };
    assert.deepEqual(validator.validate(r), ['metadata.name: must be a DNS-1123 subdomain']);
  });

  it('given a resource without a namespace, when validated, then the namespace is rejected', () => {
    const r = { ...serviceEntry(), metadata: { name: 'x' } };
    assert.deepEqual(validator.validate(r), ['metadata.namespace: must be a DNS-1123 label']);
  });

  it('given a kind that is not an Istio output kind, when validated, then it is rejected', () => {
    const r = { apiVersion: 'networking.istio.io/v1', kind: 'Sidecar', metadata, spec: {} };
    assert.deepEqual(validator.validate(r), ['kind: networking.istio.io/v1/Sidecar is not a supported output kind']);
  });

  it('given a missing CRD file, when the validator is created, then it fails with an invalid-config error', () => {
    assert.throws(() => createIstioValidator({ crdFile: '/nonexistent/crd.yaml' }), {
      code: 'MESHRELAY_ERR_INVALID_CONFIG',
    });
  });

  it('given a CRD file without the Gateway CRD, when the validator is created to precompile, then it fails at once naming the CRD', (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'crds-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const bundle = readFileSync(new URL('../schemas/istio-crd-all.gen.yaml', import.meta.url), 'utf8');
    const file = path.join(dir, 'crds.yaml');
    writeFileSync(
      file,
      bundle
        .split(/^---[ \t]*$/m)
        .filter((doc) => !/^ {2}name: gateways\.networking\.istio\.io$/m.test(doc))
        .join('---\n'),
    );
    assert.doesNotThrow(() => createIstioValidator({ crdFile: file }));
    assert.throws(() => createIstioValidator({ crdFile: file, precompile: true }), {
      code: 'MESHRELAY_ERR_INVALID_CONFIG',
      message: /gateways\.networking\.istio\.io/,
    });
  });
});

describe('validator on ServiceEntries of shared endpoint parts', () => {
  const shared = (endpoints: Record<string, unknown>[]): Resource =>
    serviceEntry({ endpoints: endpoints.map((e) => canonicalPart(e)) });
  const good = { address: '10.1.1.11', ports: { 'http-9080': 9080 }, network: 'cluster-a' };

  it('given shared endpoints that are all valid, when validated, then nothing is reported', () => {
    assert.deepEqual(createIstioValidator().validate(shared([good, { ...good, address: '10.1.1.12' }])), []);
  });

  it('given a shared endpoint with a port of 0 or an unknown field, when validated, then exactly the full validation of a plain copy is reported', () => {
    for (const bad of [
      { ...good, ports: { 'http-9080': 0 } },
      { ...good, colour: 'red' },
    ]) {
      const fresh = createIstioValidator();
      const issues = fresh.validate(shared([good, bad]));
      assert.ok(issues.length > 0, JSON.stringify(bad));
      assert.deepEqual(issues, createIstioValidator().validate(serviceEntry({ endpoints: [good, bad] })));
      // The verdict on the shared endpoint is remembered: asked again, the same answer.
      assert.deepEqual(fresh.validate(shared([good, bad])), issues);
    }
  });

  it('given endpoints concatenated from shared groups, one of them holding a bad endpoint, when validated, then exactly the full validation of a plain copy is reported and only for the ServiceEntries holding that group', () => {
    const group = (endpoints: Record<string, unknown>[]): readonly Record<string, unknown>[] =>
      canonicalPart(endpoints.map((e) => canonicalPart(e)));
    const fine = group([good, { ...good, address: '10.1.1.12' }]);
    const bad = group([
      { ...good, address: '10.1.1.13' },
      { ...good, address: '10.1.1.14', ports: { 'http-9080': 0 } },
    ]);
    const fresh = createIstioValidator();
    const issues = fresh.validate(serviceEntry({ endpoints: canonicalConcat([fine, bad]) }));
    assert.ok(issues.length > 0);
    assert.deepEqual(
      issues,
      createIstioValidator().validate(serviceEntry({ endpoints: [...fine, ...bad].map((e) => ({ ...e })) })),
    );
    // The verdict on the bad group does not spill onto a ServiceEntry that holds only the good one.
    assert.deepEqual(fresh.validate(serviceEntry({ endpoints: canonicalConcat([fine]) })), []);
    assert.deepEqual(
      fresh.validate(serviceEntry({ endpoints: canonicalConcat([bad, fine]) })),
      createIstioValidator().validate(serviceEntry({ endpoints: [...bad, ...fine].map((e) => ({ ...e })) })),
    );
  });

  it('given more shared endpoints than a ServiceEntry may hold, when validated, then the list length is still rejected', () => {
    const endpoints = Array.from({ length: 4097 }, (_, i) => ({ ...good, address: `10.2.${i >> 8}.${i & 255}` }));
    assert.ok(
      createIstioValidator()
        .validate(shared(endpoints))
        .some((issue) => issue.startsWith('spec.endpoints')),
    );
  });
});
