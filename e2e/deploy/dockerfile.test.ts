// The Dockerfile, checked structurally (no container engine runs here), and its entrypoint, run for
// real against this checkout.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { AGENT_ENV, SERVER_ENV } from './binary-options.ts';
import { CHART, ROOT } from './helm-runner.ts';

interface Instruction {
  readonly op: string;
  readonly args: string;
  readonly stage: number;
}

/** Instructions with continuation lines joined and comments dropped; `stage` counts FROM lines. */
function instructions(): Instruction[] {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  let stage = -1;
  const out: Instruction[] = [];
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const [op = '', ...rest] = line.split(/\s+/);
    if (op.toUpperCase() === 'FROM') stage += 1;
    out.push({ op: op.toUpperCase(), args: rest.join(' '), stage });
  }
  return out;
}

/** Build arguments declared before the first FROM, with their defaults. */
function globalArgs(all: readonly Instruction[]): Map<string, string> {
  return new Map(
    all
      .filter((i) => i.op === 'ARG' && i.stage === -1)
      .map((i) => {
        const [name = '', value = ''] = i.args.split('=');
        return [name, value];
      }),
  );
}

function finalStage(all: readonly Instruction[]): Instruction[] {
  const last = Math.max(...all.map((i) => i.stage));
  return all.filter((i) => i.stage === last);
}

function run(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('sh', [...args], { cwd: ROOT, env }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: stdout + stderr }),
    );
  });
}

test('given every FROM, when its build arguments are expanded, then it names a tagged image other than latest, as a named stage', () => {
  const all = instructions();
  const args = globalArgs(all);
  const froms = all.filter((i) => i.op === 'FROM');
  assert.ok(froms.length >= 2, 'not a multi-stage build');
  for (const from of froms) {
    const [image = '', as, name] = from.args.replace(/\$\{(\w+)\}/g, (_, v: string) => args.get(v) ?? '').split(/\s+/);
    assert.match(image, /^[\w./-]+:[\w][\w.-]*$/, `FROM ${from.args}`);
    assert.doesNotMatch(image, /:latest$/, `FROM ${from.args}`);
    assert.match(image, /^node:24[.\w-]*slim$/, `FROM ${from.args} is not a slim Node 24 image`);
    assert.equal(as?.toUpperCase(), 'AS', `FROM ${from.args} has no stage name`);
    assert.ok(name, `FROM ${from.args} has no stage name`);
  }
});

test('given the runtime stage, when its USER is read, then it is a numeric non-root user, the one the chart runs as', () => {
  const users = finalStage(instructions()).filter((i) => i.op === 'USER');
  assert.equal(users.length, 1);
  const [uid = '', gid = ''] = (users[0]?.args ?? '').split(':');
  assert.match(uid, /^[1-9]\d*$/, 'USER must be a numeric non-zero uid (runAsNonRoot checks it)');
  const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<
    string,
    { podSecurityContext: { runAsUser: number; runAsGroup: number } }
  >;
  for (const component of ['glooMgmtServer', 'glooAgent']) {
    assert.equal(String(values[component]?.podSecurityContext.runAsUser), uid, component);
    assert.equal(String(values[component]?.podSecurityContext.runAsGroup), gid, component);
  }
});

test('given the dependency stage, when read, then it installs production dependencies of every workspace from the lockfile', () => {
  const all = instructions();
  const deps = all.filter((i) => i.stage === 0);
  const copies = deps.filter((i) => i.op === 'COPY').map((i) => i.args);
  const workspaces = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] })
    .workspaces;
  for (const workspace of workspaces)
    assert.ok(copies.includes(`${workspace}/package.json ${workspace}/`), `${workspace}/package.json is not copied`);
  assert.ok(copies.includes('package.json package-lock.json ./'));
  assert.ok(
    deps.some((i) => i.op === 'RUN' && /\bnpm ci\b.*--omit=dev/.test(i.args)),
    'no npm ci --omit=dev',
  );
});

test('given the runtime stage, when read, then it carries the sources, protocol and examples and starts the server by default', () => {
  const stage = finalStage(instructions());
  const copies = stage.filter((i) => i.op === 'COPY').map((i) => i.args);
  for (const dir of ['packages/ packages/', 'proto/ proto/', 'examples/ examples/'])
    assert.ok(copies.includes(dir), `COPY ${dir} missing`);
  const entrypoint = JSON.parse(stage.find((i) => i.op === 'ENTRYPOINT')?.args ?? 'null') as string[];
  const script = copies.find((c) => c.endsWith(` ${entrypoint[0]}`));
  assert.ok(script, `the entrypoint ${entrypoint[0]} is not copied into the image`);
  assert.deepEqual(JSON.parse(stage.find((i) => i.op === 'CMD')?.args ?? 'null'), ['server']);
});

test("given EXPOSE, when compared with the binaries, then it lists the server's and the agent's default ports", () => {
  const exposed = finalStage(instructions())
    .filter((i) => i.op === 'EXPOSE')
    .flatMap((i) => i.args.split(/\s+/));
  const expected = ['MESHRELAY_RELAY_PORT', 'MESHRELAY_HTTP_PORT', 'MESHRELAY_METRICS_PORT'].map(
    (e) => SERVER_ENV.get(e)?.defaultValue,
  );
  expected.push(
    ...['MESHRELAY_AGENT_HEALTH_PORT', 'MESHRELAY_AGENT_ACCESS_LOG_PORT'].map((e) => AGENT_ENV.get(e)?.defaultValue),
  );
  assert.deepEqual([...exposed].sort(), [...expected].sort());
});

/** A .dockerignore pattern as a regular expression over context paths (Go filepath.Match plus **). */
function ignoreRegex(pattern: string): RegExp {
  const tokens = pattern.replace(/^\/+|\/+$/g, '').match(/\*\*\/|\*\*|\*|\?|[^*?]+/g) ?? [];
  const body = tokens
    .map((t) => {
      if (t === '**/') return '(?:.*/)?';
      if (t === '**') return '.*';
      if (t === '*') return '[^/]*';
      if (t === '?') return '[^/]';
      return t.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return new RegExp(`^${body}(/.*)?$`);
}

function ignored(path: string, patterns: readonly string[]): boolean {
  let out = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    if (ignoreRegex(negated ? pattern.slice(1) : pattern).test(path)) out = !negated;
  }
  return out;
}

test('given .dockerignore, when the COPY sources are matched against it, then they are all in the context and node_modules and .git are not', () => {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const sources = instructions()
    .filter((i) => i.op === 'COPY' && !i.args.includes('--from'))
    .flatMap((i) =>
      i.args
        .split(/\s+/)
        .filter((a) => !a.startsWith('--'))
        .slice(0, -1),
    );
  for (const source of sources)
    assert.equal(ignored(source.replace(/\/$/, ''), patterns), false, `${source} is excluded from the build context`);
  for (const path of ['node_modules', 'packages/api/node_modules', '.git', 'packages/agent/test', '.tools/helm/helm'])
    assert.equal(ignored(path, patterns), true, `${path} is sent to the build`);
});

test('given the image entrypoint, when run on this checkout with each command, then it starts the matching binary', async () => {
  const env = {
    ...process.env,
    MESHRELAY_HOME: ROOT,
    PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
  };
  const script = join(ROOT, 'deploy/docker/meshrelay.sh');
  const cases: readonly (readonly [string, string])[] = [
    ['server', 'meshrelay-server'],
    ['agent', 'meshrelay-agent'],
    ['meshctl', 'meshctl'],
    ['--help', 'meshrelay-server'],
  ];
  for (const [command, usage] of cases) {
    const args = command === '--help' ? [script, '--help'] : [script, command, '--help'];
    const result = await run(args, env);
    assert.equal(result.code, 0, `${command}: ${result.out}`);
    assert.match(result.out, new RegExp(`Usage: ${usage}\\b`), command);
  }
  const passthrough = await run([script, 'sh', '-c', 'echo passed'], env);
  assert.equal(passthrough.out.trim(), 'passed');
});
