// The operator documentation's Kubernetes instructions and configuration tables against the real
// chart, the real meshctl and the binaries' own option lists: a command shown to operators must be
// one they accept. The README links to these pages (docs/operating, docs/reference); it keeps only
// the tour, and the size a first reader takes in (checked here too).
import assert from 'node:assert/strict';
import { globSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { ERROR_CATALOGUE, GRPC_STATUS } from '@meshrelay/api';
import { runMeshctl } from '@meshrelay/meshctl';
import { freePort } from '@meshrelay/testkit';
import { AGENT_ENV, SERVER_ENV } from './binary-options.ts';
import { ROOT, findObject, parseManifests, runHelm, type KubeObject } from './helm-runner.ts';
import { kubeProblems } from './kube-checks.ts';
import { helmTemplateArgs, joinedCommands, registerWithKubeconfig, secretOf } from './meshctl-runner.ts';

/** What a first reader takes in: the README's budget, in bytes. */
const README_MAX_BYTES = 20 * 1024;

const doc = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** Every command of the text's sh code blocks, continuation lines joined. */
function commandsOf(text: string): string[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => joinedCommands(m[1] ?? ''));
}

/** Whether a table row names the variable, in full or shortened as `PREFIX_…` / `…_SUFFIX` beside its siblings. */
function namesVariable(row: string, env: string): boolean {
  if (row.includes(env)) return true;
  return [...row.matchAll(/([A-Z0-9_]*)…([A-Z0-9_]*)/g)].some(
    ([, pre = '', post = '']) => env.startsWith(pre) && env.endsWith(post) && pre.length + post.length > 0,
  );
}

const KUBERNETES_DOC = 'docs/operating/kubernetes.md';
const KUBERNETES_TEXT = doc(KUBERNETES_DOC);
const KUBERNETES = commandsOf(KUBERNETES_TEXT);
/** A meshctl command as its arguments, without the `npx meshctl` prefix. */
const meshctlArgs = (line: string) => line.replace(/^npx meshctl /, '').split(' ');

test('given the Kubernetes page, when each helm install in it is rendered, then the chart accepts it and renders valid objects', async () => {
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
  assert.ok(
    KUBERNETES_TEXT.includes('`meshrelay-agent-agent-access-log`'),
    `${KUBERNETES_DOC} names the access-log Service`,
  );
  findObject(rendered, 'Service', 'meshrelay-agent-agent-access-log');
});

test("given the Kubernetes page's meshctl register with --kubeconfig, when it runs against a management cluster's API, then the page shows exactly the commands it prints", async (t) => {
  const register = KUBERNETES.find((c) => c.startsWith('npx meshctl cluster register') && c.includes('--kubeconfig'));
  assert.ok(register, `no meshctl cluster register --kubeconfig in ${KUBERNETES_DOC}`);
  const shownToken = KUBERNETES.map((c) =>
    c.includes('create secret generic relay-identity-token-secret') ? secretOf(c) : undefined,
  ).find((s) => s !== undefined);
  assert.ok(shownToken, `no token Secret line in ${KUBERNETES_DOC}`);

  const { dir, install } = await registerWithKubeconfig(t, meshctlArgs(register));

  const printed = install.map((line) => line.replaceAll(dir, dirname(shownToken.path)));
  for (const line of printed)
    assert.ok(KUBERNETES.includes(line), `${KUBERNETES_DOC} lacks the line meshctl prints:\n${line}`);
});

test("given the Kubernetes page's other meshctl commands, when run with no server listening, then meshctl accepts their arguments and fails only to reach the server", async () => {
  const others = KUBERNETES.filter((c) => c.startsWith('npx meshctl ') && !c.includes('--kubeconfig'));
  assert.ok(others.length >= 2, `expected the HTTP registration and the check, found ${others.join('; ')}`);
  const server = `http://127.0.0.1:${await freePort()}`;
  for (const line of others) {
    let stderr = '';
    // The admin token as the page's export line gives it.
    const io = {
      stdout: { write: () => true },
      stderr: { write: (s: string) => (stderr += s) },
      env: { MESHRELAY_ADMIN_TOKEN: 'token-from-the-secret' },
    };
    const code = await runMeshctl(['--server', server, '--timeout', '2000', ...meshctlArgs(line)], io);
    assert.equal(code, 1, `${line}: exit ${code} (2 is a usage error): ${stderr}`);
    assert.doesNotMatch(stderr, /no admin token|UNAUTHENTICATED/, line);
  }
});

test("given the Kubernetes page's kubectl lines for the management cluster, when compared with the chart, then each names a rendered object", async () => {
  const install = KUBERNETES.find((c) => c.startsWith('helm install meshrelay '));
  assert.ok(install);
  const run = await runHelm(helmTemplateArgs(install));
  assert.equal(run.code, 0, run.stderr);
  const objects = parseManifests(run.stdout);
  const named = KUBERNETES.filter((c) => c.startsWith('kubectl -n ')).flatMap((c) =>
    [...c.matchAll(/(?:\b(deploy|svc)\/|get (svc) )([a-z0-9-]+)/g)].map((m) => [m[1] ?? m[2], m[3]] as const),
  );
  assert.ok(named.length >= 3, 'the page names the rollout, the relay Service and the API Service');
  for (const [kind, name] of named) findObject(objects, kind === 'deploy' ? 'Deployment' : 'Service', name ?? '');
});

for (const [page, options] of [
  ['docs/reference/meshrelay-server.md', SERVER_ENV],
  ['docs/reference/meshrelay-agent.md', AGENT_ENV],
] as const) {
  test(`given the flag table in ${page}, when compared with the binary's options, then every flag and its variable has a row`, () => {
    const rows = doc(page)
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    const missing = [...options.entries()]
      .filter(([env, o]) => !rows.some((row) => row.includes(`\`${o.flag}\``) && namesVariable(row, env)))
      .map(([env, o]) => `${o.flag} (${env})`);
    assert.deepEqual(missing, []);
  });
}

test("given the Security page, when compared with meshrelay-server's options, then each port's bind flag and default are the binary's", () => {
  const security = doc('docs/operating/security.md');
  for (const env of ['MESHRELAY_RELAY_HOST', 'MESHRELAY_HTTP_HOST', 'MESHRELAY_METRICS_HOST']) {
    const option = SERVER_ENV.get(env);
    assert.ok(option, env);
    assert.match(
      security,
      new RegExp(`\\| \`${option.flag}\` \\| \`${option.defaultValue?.replaceAll('.', '\\.')}\``),
      `${option.flag} defaults to ${option.defaultValue}`,
    );
  }
  for (const way of [
    '--admin-token',
    'MESHRELAY_ADMIN_TOKEN',
    '--admin-token-file',
    'MESHRELAY_ADMIN_TOKEN_FILE',
    '--state-dir',
    '.run/server/admin-token',
    'meshrelay-admin-token',
  ]) {
    assert.ok(security.includes(way), `docs/operating/security.md does not name ${way}`);
  }
});

test('given the README, when measured, then it stays within what a first reader takes in and shows the two commands on its first screen', () => {
  const bytes = statSync(join(ROOT, 'README.md')).size;
  assert.ok(
    bytes <= README_MAX_BYTES,
    `README.md is ${bytes} bytes; keep it at most ${README_MAX_BYTES} and move detail to docs/`,
  );
  const firstScreen = doc('README.md').split('\n').slice(0, 50).join('\n');
  for (const command of ['npm ci && npm start', 'npm ci && npm test'])
    assert.ok(firstScreen.includes(command), `the first 50 lines show ${command}`);
});

test('given the error catalogue, when docs/reference/errors.md is read, then every code has one row with its gRPC and HTTP status, and no row names a code that does not exist', () => {
  const rows = doc('docs/reference/errors.md')
    .split('\n')
    .filter((line) => line.startsWith('| `MESHRELAY_ERR_'));
  const grpcName = new Map<number, string>(Object.entries(GRPC_STATUS).map(([name, n]) => [n, name]));
  const documented = rows.map((row) => row.split(' | ').map((cell) => cell.replace(/^\| /, '')));
  for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
    const matching = documented.filter(([name]) => name === `\`${code}\``);
    assert.equal(matching.length, 1, `${code}: ${matching.length} rows`);
    assert.deepEqual(matching[0]?.slice(1, 3), [grpcName.get(spec.grpc), String(spec.http)], code);
  }
  assert.deepEqual(
    documented
      .map(([name]) => name?.replaceAll('`', ''))
      .filter((name) => !(name !== undefined && name in ERROR_CATALOGUE)),
    [],
  );
});

/** meshctl's own help for `args`: the names of the commands it lists. */
async function meshctlCommands(args: readonly string[]): Promise<string[]> {
  let out = '';
  const io = {
    stdout: { write: (s: string) => ((out += s), true) },
    stderr: { write: (s: string) => ((out += s), true) },
    env: {},
  };
  assert.equal(await runMeshctl([...args, '--help'], io), 0, out);
  const commands = out.slice(out.indexOf('\nCommands:\n'));
  return [...commands.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1] ?? '').filter((name) => name !== 'help');
}

test("given meshctl's own help, when compared with docs/reference/meshctl.md, then every command and subcommand has a row", async () => {
  const rows = doc('docs/reference/meshctl.md')
    .split('\n')
    .filter((line) => line.startsWith('| `meshctl '));
  const paths: string[] = [];
  for (const command of await meshctlCommands([])) {
    const subcommands = await meshctlCommands([command]);
    paths.push(...(subcommands.length === 0 ? [command] : subcommands.map((sub) => `${command} ${sub}`)));
  }
  assert.ok(paths.length >= 15, `expected meshctl's commands, found ${paths.join(', ')}`);
  assert.deepEqual(
    paths.filter(
      (path) => !rows.some((row) => row.includes(`\`meshctl ${path}\``) || row.includes(`\`meshctl ${path} `)),
    ),
    [],
  );
});

test("given the safe-mode page's Prometheus queries, when compared with the fault suite, then each is a query a real Prometheus answers there", () => {
  const page = doc('docs/operating/safe-mode.md');
  const block = /The queries Gloo operators already run[\s\S]*?```\n([\s\S]*?)```/.exec(page)?.[1] ?? '';
  const queries = block.split('\n').filter((line) => line.trim() !== '');
  assert.equal(queries.length, 2, 'the page shows the two Gloo operator queries');
  const faults = doc('e2e/faults/restart.test.ts');
  for (const query of queries)
    assert.ok(faults.includes(`'${query}'`), `e2e/faults/restart.test.ts does not run ${query}`);
});

/** `a.{b,c}.d` as `a.b.d` and `a.c.d`. */
function expandBraces(path: string): string[] {
  const m = /\{([^}]+)\}/.exec(path);
  return m ? (m[1] ?? '').split(',').flatMap((alt) => expandBraces(path.replace(m[0], alt))) : [path];
}

test("given the Helm values the operating pages name, when looked up in the chart's values.yaml, then each exists", () => {
  const values = parse(doc('deploy/helm/meshrelay/values.yaml')) as Record<string, unknown>;
  const has = (path: string): boolean =>
    path
      .split('.')
      .reduce<unknown>(
        (node, key) =>
          node !== null && typeof node === 'object' && key in node ? (node as Record<string, unknown>)[key] : undefined,
        values,
      ) !== undefined;
  const named = globSync('docs/operating/*.md', { cwd: ROOT }).flatMap((page) =>
    [...doc(page).matchAll(/`((?:glooMgmtServer|glooAgent|redis)\.[A-Za-z0-9_.{},]+)`/g)].flatMap((m) =>
      expandBraces(m[1] ?? '').map((path) => `${page}: ${path}`),
    ),
  );
  assert.ok(named.length >= 25, `expected the chart's values in the operating pages, found ${named.length}`);
  assert.deepEqual(
    named.filter((entry) => !has(entry.split(': ')[1] ?? '')),
    [],
  );
});
