// The object checks the chart tests rely on must catch what the API server would refuse.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from './helm-runner.ts';
import { kubeProblems } from './kube-checks.ts';

function deployment(container: Record<string, unknown>, volumes: unknown[] = []): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'app', namespace: 'ns' },
    spec: {
      selector: { matchLabels: { app: 'x' } },
      template: {
        metadata: { labels: { app: 'x' } },
        spec: { containers: [{ name: 'main', image: 'img:1.0', ...container }], volumes },
      },
    },
  };
}

function service(targetPort: string | number, selector: Record<string, string> = { app: 'x' }): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'svc', namespace: 'ns' },
    spec: { selector, ports: [{ name: 'p', port: 80, targetPort }] },
  };
}

test('given a well-formed Deployment and Service, when checked, then no problem is reported', () => {
  const objects = [
    deployment({ ports: [{ name: 'http', containerPort: 8080 }], env: [{ name: 'A', value: '1' }] }),
    service('http'),
  ];
  assert.deepEqual(kubeProblems(objects), []);
});

test('given a container port above 65535, when checked, then the port is reported', () => {
  assert.match(
    kubeProblems([deployment({ ports: [{ name: 'http', containerPort: 70000 }] })]).join('\n'),
    /containerPort 70000 is outside/,
  );
});

test('given an env entry with both value and valueFrom, when checked, then it is reported', () => {
  const problems = kubeProblems([
    deployment({ env: [{ name: 'A', value: '1', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }),
  ]);
  assert.match(problems.join('\n'), /env A needs exactly one of value and valueFrom/);
});

test('given the same env name twice, when checked, then it is reported', () => {
  assert.match(
    kubeProblems([
      deployment({
        env: [
          { name: 'A', value: '1' },
          { name: 'A', value: '2' },
        ],
      }),
    ]).join('\n'),
    /env A is set twice/,
  );
});

test('given a wrongly typed field, when checked, then the Kubernetes schema reports it', () => {
  assert.match(
    kubeProblems([deployment({ ports: [{ name: 'http', containerPort: '8080' }] })]).join('\n'),
    /schema: .*containerPort must be integer/,
  );
});

test('given a volumeMount without its volume, when checked, then it is reported', () => {
  assert.match(
    kubeProblems([deployment({ volumeMounts: [{ name: 'data', mountPath: '/data' }] })]).join('\n'),
    /volumeMount "data" has no volume/,
  );
});

test('given a probe on an undeclared port name, when checked, then it is reported', () => {
  assert.match(
    kubeProblems([deployment({ readinessProbe: { httpGet: { path: '/', port: 'http' } } })]).join('\n'),
    /readinessProbe uses port "http"/,
  );
});

test('given a Service whose targetPort no selected pod declares, when checked, then it is reported', () => {
  assert.match(
    kubeProblems([deployment({ ports: [{ name: 'http', containerPort: 8080 }] }), service('grpc')]).join('\n'),
    /targetPort "grpc"/,
  );
});

test('given a Service selecting no rendered pod, when checked, then it is reported', () => {
  assert.match(kubeProblems([deployment({}), service(80, { app: 'other' })]).join('\n'), /selects no rendered pods/);
});

test('given an image on the latest tag, when checked, then it is reported', () => {
  assert.match(
    kubeProblems([deployment({ image: 'img:latest' })]).join('\n'),
    /needs an explicit tag other than latest/,
  );
});

test('given a name that is not a DNS-1123 subdomain, when checked, then it is reported', () => {
  const bad = { ...deployment({}), metadata: { name: 'App_1', namespace: 'ns' } };
  assert.match(kubeProblems([bad]).join('\n'), /metadata.name "App_1"/);
});
