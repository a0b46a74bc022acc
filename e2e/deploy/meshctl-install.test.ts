// What `meshctl cluster register NAME --kubeconfig F` prints for the workload cluster must work with
// this chart, and the chart's notes must tell the operator the same commands.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHART, findObject, parseManifests, runHelm } from './helm-runner.ts';
import { asList, asRecord, containerEnv, kubeProblems, podSpecOf } from './kube-checks.ts';
import { helmTemplateArgs, joinedCommands, registerWithKubeconfig, secretOf } from './meshctl-runner.ts';

const RELAY = 'relay.example.com:9900';
const REGISTER = [
  'cluster',
  'register',
  'east',
  '--kubeconfig',
  'mgmt.kubeconfig',
  '--relay-address',
  RELAY,
  '--token-out',
  'token',
  '--ca-out',
  'ca.crt',
];

test('given meshctl registered a cluster through the Kubernetes API, when its printed helm install is rendered, then the agent mounts exactly the Secrets its kubectl lines create', async (t) => {
  const { dir, install } = await registerWithKubeconfig(t, REGISTER);
  const [namespaceLine, tokenLine, caLine, helmLine, ...rest] = install;
  assert.deepEqual(rest, []);
  assert.equal(namespaceLine, 'kubectl create namespace gloo-mesh');
  const token = secretOf(tokenLine ?? '');
  const ca = secretOf(caLine ?? '');
  assert.deepEqual([token.path, ca.path], [`${dir}/token`, `${dir}/ca.crt`]);

  const run = await runHelm(helmTemplateArgs(helmLine ?? ''));

  assert.equal(run.code, 0, run.stderr);
  const objects = parseManifests(run.stdout);
  assert.deepEqual(kubeProblems(objects), []);
  assert.equal(
    objects.some((o) => /mgmt-server|redis/.test(o.metadata.name)),
    false,
    'the workload cluster gets only the agent',
  );
  const agent = findObject(objects, 'Deployment', 'meshrelay-agent-agent');
  assert.equal(agent.metadata.namespace, 'gloo-mesh');
  const volumes = asList(podSpecOf(agent)?.['volumes']);
  const secretVolume = (name: string) => asRecord(volumes.find((v) => v['name'] === name)?.['secret']);
  assert.equal(secretVolume('relay-token')['secretName'], token.name);
  assert.equal(asList(secretVolume('relay-token')['items'])[0]?.['key'], token.key);
  assert.equal(secretVolume('relay-ca')['secretName'], ca.name);
  assert.equal(asList(secretVolume('relay-ca')['items'])[0]?.['key'], ca.key);
  const env = containerEnv(agent, 'agent');
  assert.equal(env.get('MESHRELAY_AGENT_CLUSTER'), 'east');
  assert.equal(env.get('MESHRELAY_AGENT_SERVER_ADDRESS'), RELAY);
  assert.equal(env.get('MESHRELAY_AGENT_LEASE_NAMESPACE'), 'gloo-mesh');
});

test('given a server install with an advertised relay address, when its notes are compared with what meshctl prints for a cluster, then the agent install commands are the same', async (t) => {
  const { dir, install } = await registerWithKubeconfig(t, REGISTER);
  const run = await runHelm([
    'install',
    'meshrelay',
    CHART,
    '--dry-run=client',
    '--namespace',
    'gloo-mesh',
    '--set',
    `glooMgmtServer.relay.advertiseAddress=${RELAY}`,
  ]);
  assert.equal(run.code, 0, run.stderr);
  const notes = joinedCommands(run.stdout.slice(run.stdout.indexOf('NOTES:')).replaceAll('<cluster>', 'east'));

  const printed = install.map((line) => line.replaceAll(`${dir}/`, ''));

  for (const line of printed) assert.ok(notes.includes(line), `the notes lack:\n${line}\nnotes:\n${notes.join('\n')}`);
  assert.ok(
    notes.includes(
      `meshctl cluster register east --kubeconfig <management-kubeconfig> --namespace gloo-mesh --relay-address ${RELAY} --token-out token --ca-out ca.crt`,
    ),
  );
});
