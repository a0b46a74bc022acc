import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Resource } from '@meshrelay/api';
import {
  buildEndpointSlice,
  buildGloo,
  buildNode,
  buildPod,
  buildService,
  buildVirtualDestination,
} from '@meshrelay/testkit';
import {
  createIstioValidator,
  InputJudgements,
  translate,
  validateInputResource,
  validateInputResources,
} from '../src/index.ts';
import { buildTestInputSnapshot } from '@meshrelay/testkit';

const reviews = (): Resource =>
  buildService({
    name: 'reviews',
    namespace: 'bookinfo',
    ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
    selector: { app: 'reviews' },
  });
const vd = (): Resource =>
  buildVirtualDestination({
    name: 'reviews-global',
    namespace: 'bookinfo',
    hosts: ['reviews.global'],
    services: [{ name: 'reviews' }],
    ports: [{ number: 9080, protocol: 'HTTP' }],
  });
const rt = (http: unknown[]): Resource =>
  buildGloo('RouteTable', { name: 'rt', namespace: 'bookinfo', spec: { hosts: ['reviews.global'], http } });

/** Deep-sets `path` (dot/bracket notation) in a copy of `r`. */
function withField(r: Resource, path: string, value: unknown): Resource {
  const copy = structuredClone(r) as Record<string, unknown>;
  const keys = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let node = copy as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[keys[keys.length - 1] as string] = value;
  return copy as unknown as Resource;
}

describe('validateInputResource', () => {
  const valid: [string, Resource][] = [
    ['a Service', reviews()],
    [
      'an EndpointSlice',
      buildEndpointSlice({
        service: 'reviews',
        namespace: 'bookinfo',
        ports: [{ name: 'http', port: 9080 }],
        endpoints: [{ ip: '10.0.0.1', pod: 'p', node: 'n' }],
      }),
    ],
    ['a Pod', buildPod({ name: 'p', namespace: 'bookinfo', ip: 'fd00::1', node: 'n' })],
    ['a Node', buildNode({ name: 'n', region: 'us-east', zone: 'us-east-1a' })],
    ['a VirtualDestination', vd()],
    [
      'a RouteTable',
      rt([
        {
          matchers: [{ uri: { prefix: '/' }, headers: [{ name: 'x', value: 'y' }] }],
          forwardTo: { destinations: [{ ref: { name: 'reviews' }, port: { number: 9080 } }] },
        },
      ]),
    ],
    [
      'an AccessPolicy',
      buildGloo('AccessPolicy', {
        name: 'ap',
        namespace: 'bookinfo',
        spec: { config: { authz: { allowedClients: [{ serviceAccountSelector: { name: 'sa' } }] } } },
      }),
    ],
    [
      'a FailoverPolicy',
      buildGloo('FailoverPolicy', {
        name: 'fp',
        namespace: 'bookinfo',
        spec: { config: { localityMappings: [{ from: { region: 'a' }, to: [{ region: 'b', weight: 100 }] }] } },
      }),
    ],
    [
      'an OutlierDetectionPolicy',
      buildGloo('OutlierDetectionPolicy', {
        name: 'od',
        namespace: 'bookinfo',
        spec: { config: { interval: '1s500ms' } },
      }),
    ],
    [
      'a RetryTimeoutPolicy',
      buildGloo('RetryTimeoutPolicy', {
        name: 'rp',
        namespace: 'bookinfo',
        spec: { config: { requestTimeout: '1.5s' } },
      }),
    ],
    [
      'a LoadBalancerPolicy',
      buildGloo('LoadBalancerPolicy', {
        name: 'lb',
        namespace: 'bookinfo',
        spec: {
          config: { consistentHash: { httpCookie: { name: 'session', ttl: '60s' } }, warmupDurationSecs: '30s' },
        },
      }),
    ],
  ];
  for (const [what, r] of valid) {
    it(`given ${what} with valid fields, when validated, then no problem is reported`, () => {
      assert.deepEqual(validateInputResource(r), []);
    });
  }

  const invalid: [string, Resource, string, RegExp][] = [
    [
      'an unsupported kind',
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'y' } },
      'kind',
      /not a supported input kind/,
    ],
    [
      'a name that is not a DNS-1123 subdomain',
      withField(reviews(), 'metadata.name', 'Reviews_1'),
      'metadata.name',
      /DNS-1123 subdomain/,
    ],
    [
      'a namespaced kind without a namespace',
      withField(reviews(), 'metadata.namespace', undefined),
      'metadata.namespace',
      /required/,
    ],
    [
      'a Node with a namespace',
      withField(buildNode({ name: 'n' }), 'metadata.namespace', 'x'),
      'metadata.namespace',
      /must not be set/,
    ],
    [
      'a label value that is not a string',
      withField(reviews(), 'metadata.labels', { app: 1 }),
      'metadata.labels.app',
      /string/,
    ],
    ['a Service port above 65535', withField(reviews(), 'spec.ports[0].port', 65536), 'spec.ports[0].port', /<= 65535/],
    [
      'a Service targetPort of 0',
      withField(reviews(), 'spec.ports[0].targetPort', 0),
      'spec.ports[0].targetPort',
      />= 1/,
    ],
    [
      'a Service external IP that is not an IP',
      withField(reviews(), 'spec.externalIPs', ['not-an-ip']),
      'spec.externalIPs[0]',
      /format "ip"/,
    ],
    [
      'a Pod IP that is a number',
      withField(buildPod({ name: 'p', namespace: 'n', ip: '10.0.0.1' }), 'status.podIP', 42),
      'status.podIP',
      /string/,
    ],
    [
      'an EndpointSlice port that is a string',
      withField(
        buildEndpointSlice({ service: 's', namespace: 'n', ports: [{ name: 'http', port: 80 }], endpoints: [] }),
        'ports[0].port',
        '80',
      ),
      'ports[0].port',
      /integer/,
    ],
    ['a Gloo kind without a spec', withField(vd(), 'spec', undefined), 'spec', /required/],
    [
      'an unknown VirtualDestination field',
      withField(vd(), 'spec.ports[0].nodePort', 1),
      'spec.ports[0].nodePort',
      /unknown field/,
    ],
    [
      'a VirtualDestination port number of 0',
      withField(vd(), 'spec.ports[0].number', 0),
      'spec.ports[0].number',
      />= 1/,
    ],
    [
      'a bad VirtualDestination protocol',
      withField(vd(), 'spec.ports[0].protocol', 'QUIC'),
      'spec.ports[0].protocol',
      /one of HTTP/,
    ],
    ['a VirtualDestination without hosts', withField(vd(), 'spec.hosts', undefined), 'spec.hosts', /required/],
    [
      'a URI matcher with two match types',
      rt([{ matchers: [{ uri: { exact: '/a', prefix: '/b' } }], forwardTo: {} }]),
      'spec.http[0].matchers[0].uri',
      /exactly one of exact, prefix, regex, suffix/,
    ],
    [
      'a destination port with number and name',
      rt([{ forwardTo: { destinations: [{ ref: { name: 'r' }, port: { number: 1, name: 'a' } }] } }]),
      'spec.http[0].forwardTo.destinations[0].port',
      /both number and name/,
    ],
    [
      'a route with an action Gloo does not define',
      rt([{ forwardTo: {}, rewriteTo: { host: 'x' } }]),
      'spec.http[0].rewriteTo',
      /unknown field/,
    ],
    [
      'an AccessPolicy with an unknown authorization field',
      buildGloo('AccessPolicy', { name: 'ap', namespace: 'n', spec: { config: { authz: { allowedHosts: ['x'] } } } }),
      'spec.config.authz.allowedHosts',
      /unknown field/,
    ],
    [
      'a FailoverPolicy with mappings and priority labels',
      buildGloo('FailoverPolicy', {
        name: 'fp',
        namespace: 'n',
        spec: { config: { localityMappings: [], priorityLabels: { labels: ['x'] } } },
      }),
      'spec.config',
      /both localityMappings and priorityLabels/,
    ],
    [
      'a LoadBalancerPolicy with both simple and consistentHash',
      buildGloo('LoadBalancerPolicy', {
        name: 'lb',
        namespace: 'n',
        spec: { config: { simple: 'ROUND_ROBIN', consistentHash: { useSourceIp: true } } },
      }),
      'spec.config',
      /must not set both simple and consistentHash/,
    ],
    [
      'a LoadBalancerPolicy with an unknown algorithm',
      buildGloo('LoadBalancerPolicy', { name: 'lb', namespace: 'n', spec: { config: { simple: 'LEAST_CONN' } } }),
      'spec.config.simple',
      /must be one of/,
    ],
    [
      'an OutlierDetectionPolicy with a bad duration',
      buildGloo('OutlierDetectionPolicy', { name: 'od', namespace: 'n', spec: { config: { interval: '10 seconds' } } }),
      'spec.config.interval',
      /pattern/,
    ],
    [
      'a RetryTimeoutPolicy with neither retries nor timeout',
      buildGloo('RetryTimeoutPolicy', { name: 'rp', namespace: 'n', spec: { config: {} } }),
      'spec.config',
      /at least one of retries, requestTimeout/,
    ],
    [
      'a RetryTimeoutPolicy with negative attempts',
      buildGloo('RetryTimeoutPolicy', { name: 'rp', namespace: 'n', spec: { config: { retries: { attempts: -1 } } } }),
      'spec.config.retries.attempts',
      />= 0/,
    ],
  ];
  for (const [what, r, path, message] of invalid) {
    it(`given ${what}, when validated, then the problem is reported at ${path}`, () => {
      const problems = validateInputResource(r);
      const hit = problems.find((p) => p.path === path);
      assert.ok(hit, `no problem at ${path}; got ${JSON.stringify(problems)}`);
      assert.match(hit.message, message);
    });
  }

  it('given a value that is not an object, when validated, then it is rejected without throwing', () => {
    assert.deepEqual(validateInputResource(null as unknown as Resource), [{ path: '', message: 'must be an object' }]);
  });
});

describe('validateInputResources', () => {
  it('given valid and invalid resources, when validated together, then the invalid ones are rejected with their key and the rest kept in order', () => {
    const bad = withField(reviews(), 'spec.ports[0].port', 0);
    const result = validateInputResources([vd(), bad, reviews()]);
    assert.deepEqual(result.valid, [vd(), reviews()]);
    assert.equal(result.rejected.length, 1);
    assert.deepEqual(result.rejected[0]?.key, {
      apiVersion: 'v1',
      kind: 'Service',
      namespace: 'bookinfo',
      name: 'reviews',
    });
    assert.deepEqual(
      result.rejected[0]?.problems.map((p) => p.path),
      ['spec.ports[0].port'],
    );
  });
});

describe('validateInputResources', () => {
  it('given a Gloo resource whose spec is invalid, when split, then it is kept so translation can report it INVALID', () => {
    const policy = buildGloo('AccessPolicy', {
      name: 'ap',
      namespace: 'n',
      spec: { config: { authz: { allowedHosts: ['x'] } } },
    });
    const { valid, rejected, carried } = validateInputResources([policy, reviews()]);
    assert.deepEqual(valid, [policy, reviews()]);
    assert.deepEqual(rejected, []);
    assert.deepEqual(carried, [policy], 'kept despite its problems, so a list holding it is not clean');
  });

  it('given a Gloo resource whose name is invalid, when split, then it is rejected', () => {
    const policy = buildGloo('AccessPolicy', { name: 'Bad_Name', namespace: 'n', spec: { config: {} } });
    assert.equal(validateInputResources([policy]).rejected.length, 1);
  });
});

describe('inputs judged once', () => {
  it('given a frozen list recorded clean, when translated, then admission trusts the record and does not judge its resources again', () => {
    // A list with an invalid Service: intake would never record it; recording it anyway shows what the record spares.
    const bad = withField(reviews(), 'spec.ports[0].port', 0);
    const judged = buildTestInputSnapshot('c1', [bad]);
    const trusted = buildTestInputSnapshot('c1', [bad]);
    assert.ok(Object.isFrozen(trusted.resources));
    const judgements = new InputJudgements();
    judgements.record(trusted.resources, true);
    assert.ok(judgements.isClean(trusted.resources));
    assert.ok(!judgements.isClean(judged.resources), 'a record names one list object, not its content');
    const validator = createIstioValidator();
    const reasons = (snapshot: typeof judged, given?: InputJudgements): string[] =>
      translate(
        {
          inputs: new Map([['c1', snapshot]]),
          clusters: [],
          vips: new Map(),
          ...(given ? { judgements: given } : {}),
        },
        validator,
      ).problems.map((p) => p.reason);
    assert.ok(
      reasons(judged, judgements).some((r) => r.startsWith('invalid input resource ignored: spec.ports[0].port')),
    );
    assert.ok(!reasons(trusted, judgements).some((r) => r.startsWith('invalid input resource ignored')));
    // The record is the owner's: translation not given these judgements judges the list itself.
    assert.ok(reasons(trusted).some((r) => r.startsWith('invalid input resource ignored: spec.ports[0].port')));
    assert.ok(
      reasons(trusted, new InputJudgements()).some((r) => r.startsWith('invalid input resource ignored')),
      "another owner's judgements know nothing of the list",
    );
  });

  it('given a list that is not frozen, when recorded, then it is not taken as judged (it could change)', () => {
    const list = [reviews()];
    const judgements = new InputJudgements();
    judgements.record(list, true);
    assert.ok(!judgements.isClean(list) && !judgements.isJudged(list));
  });
});
