// The README's Kubernetes instructions and configuration tables against the real chart, the real
// meshctl and the binaries' own option lists: a command shown to operators must be one they accept.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { runMeshctl } from '@meshrelay/meshctl';
import { freePort } from '@meshrelay/testkit';
import { AGENT_ENV, SERVER_ENV } from './binary-options.ts';
import { ROOT, findObject, parseManifests, runHelm, type KubeObject } from './helm-runner.ts';
import { kubeProblems } from './kube-checks.ts';
import { helmTemplateArgs, joinedCommands, registerWithKubeconfig, secretOf } from './meshctl-runner.ts';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The text under a heading, up to the next heading of the same or a higher level. */
function section(heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const start = README.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no "${heading}"`);
  const rest = README.slice(start + heading.length + 2);
  const next = rest.search(new RegExp(`^#{1,${level}} `, 'm'));
  return next < 0 ? rest : rest.slice(0, next);
}

/** Every command of the section's sh code blocks, continuation lines joined. */
function commandsOf(text: string): string[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => joinedCommands(m[1] ?? ''));
}

const KUBERNETES = commandsOf(section('## On Kubernetes'));
/** A meshctl command as its arguments, without the `npx meshctl` prefix. */
const meshctlArgs = (line: string) => line.replace(/^npx meshctl /, '').split(' ');

test('given the README\'s Kubernetes section, when each helm install in it is rendered, then the chart accepts it and renders valid objects', async () => {
  const installs = KUBERNETES.filter((c) => c.startsWith('helm install '));
  assert.equal(installs.length, 2, 'one install for the management plane, one for the agent');
  const rendered: KubeObject[] = [];
  for (const line of installs) {
    const run = await runHelm(helmTemplateArgs(line));
    assert.equal(run.code, 0, `${line}\n${run.stderr}`);
    const objects = parseManifests(run.stdout);
    assert.deepEqual(kubeProblems(objects), [], line);
    rendered.push(...objects);
  }
  assert.ok(section('## On Kubernetes').includes('`meshrelay-agent-agent-access-log`'), 'the README names the access-log Service');
  findObject(rendered, 'Service', 'meshrelay-agent-agent-access-log');
});

test('given the README\'s meshctl register with --kubeconfig, when it runs against a management cluster\'s API, then the README shows exactly the commands it prints', async (t) => {
  const register = KUBERNETES.find((c) => c.startsWith('npx meshctl cluster register') && c.includes('--kubeconfig'));
  assert.ok(register, 'no meshctl cluster register --kubeconfig in the README');
  const shownToken = KUBERNETES.map((c) => (c.includes('create secret generic relay-identity-token-secret') ? secretOf(c) : undefined)).find((s) => s !== undefined);
  assert.ok(shownToken, 'no token Secret line in the README');

  const { dir, install } = await registerWithKubeconfig(t, meshctlArgs(register));

  const printed = install.map((line) => line.replaceAll(dir, dirname(shownToken.path)));
  for (const line of printed) assert.ok(KUBERNETES.includes(line), `the README lacks the line meshctl prints:\n${line}`);
});

test('given the README\'s other meshctl commands, when run with no server listening, then meshctl accepts their arguments and fails only to reach the server', async () => {
  const others = KUBERNETES.filter((c) => c.startsWith('npx meshctl ') && !c.includes('--kubeconfig'));
  assert.ok(others.length >= 2, `expected the HTTP registration and the check, found ${others.join('; ')}`);
  const server = `http://127.0.0.1:${await freePort()}`;
  for (const line of others) {
    let stderr = '';
    // The admin token as the README's export line gives it.
    const io = { stdout: { write: () => true }, stderr: { write: (s: string) => (stderr += s) }, env: { MESHRELAY_ADMIN_TOKEN: 'token-from-the-secret' } };
    const code = await runMeshctl(['--server', server, '--timeout', '2000', ...meshctlArgs(line)], io);
    assert.equal(code, 1, `${line}: exit ${code} (2 is a usage error): ${stderr}`);
    assert.doesNotMatch(stderr, /no admin token|UNAUTHENTICATED/, line);
  }
});

test('given the README\'s kubectl lines for the management cluster, when compared with the chart, then each names a rendered object', async () => {
  const install = KUBERNETES.find((c) => c.startsWith('helm install meshrelay '));
  assert.ok(install);
  const run = await runHelm(helmTemplateArgs(install));
  assert.equal(run.code, 0, run.stderr);
  const objects = parseManifests(run.stdout);
  const named = KUBERNETES.filter((c) => c.startsWith('kubectl -n ')).flatMap((c) => [...c.matchAll(/(?:\b(deploy|svc)\/|get (svc) )([a-z0-9-]+)/g)].map((m) => [m[1] ?? m[2], m[3]] as const));
  assert.ok(named.length >= 3, 'the README names the rollout, the relay Service and the API Service');
  for (const [kind, name] of named) findObject(objects, kind === 'deploy' ? 'Deployment' : 'Service', name ?? '');
});

for (const [heading, options] of [['### meshrelay-server', SERVER_ENV], ['### meshrelay-agent', AGENT_ENV]] as const) {
  test(`given the README table "${heading}", when compared with the binary's options, then every flag has a row`, () => {
    const table = section(heading);
    const missing = [...options.values()].map((o) => o.flag).filter((flag) => !table.includes(`\`${flag}\``));
    assert.deepEqual(missing, []);
  });
}

test('given the README\'s Security section, when compared with meshrelay-server\'s options, then each port\'s bind flag and default are the binary\'s', () => {
  const security = section('## Security');
  for (const env of ['MESHRELAY_RELAY_HOST', 'MESHRELAY_HTTP_HOST', 'MESHRELAY_METRICS_HOST']) {
    const option = SERVER_ENV.get(env);
    assert.ok(option, env);
    assert.match(security, new RegExp(`\\| \`${option.flag}\` \\| \`${option.defaultValue?.replaceAll('.', '\\.')}\``), `${option.flag} defaults to ${option.defaultValue}`);
  }
  for (const way of ['--admin-token', 'MESHRELAY_ADMIN_TOKEN', '--admin-token-file', 'MESHRELAY_ADMIN_TOKEN_FILE', '--state-dir', '.run/server/admin-token', 'meshrelay-admin-token']) {
    assert.ok(security.includes(way), `the Security section does not name ${way}`);
  }
});
