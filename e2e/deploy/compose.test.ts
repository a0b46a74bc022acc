// docker-compose.yml and the Prometheus config it mounts. No container engine runs here: the file is
// validated against the Compose Specification schema, its references are resolved, and the
// environment it gives each process is checked against what that binary reads and accepts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { validateAgentOptions } from '@meshrelay/agent';
import { parseServerConfig } from '@meshrelay/mgmt-server';
import { AGENT_ENV, SERVER_ENV } from './binary-options.ts';
import { composeProblems } from './compose-spec.ts';
import { ROOT } from './helm-runner.ts';

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const PROMETHEUS_FILE = join(ROOT, 'deploy/prometheus/prometheus.yml');

/** The compose file as the engine sees it: YAML anchors and merge keys resolved. */
function loadCompose(): Compose {
  return parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as Compose;
}

function service(compose: Compose, name: string): Service {
  const found = compose.services[name];
  assert.ok(found, `no service ${name}`);
  return found;
}

function run(command: string, args: readonly string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(command, [...args], { cwd: ROOT }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: stdout + stderr }),
    );
  });
}

const SERVERS = ['mgmt-0', 'mgmt-1'];
const AGENTS = { 'agent-a': 'cluster-a', 'agent-b': 'cluster-b' } as const;

test('given docker-compose.yml, when validated against the Compose Specification schema, then it conforms', () => {
  assert.deepEqual(composeProblems(loadCompose()), []);
});

test('given a compose file with a wrong field, when validated, then the schema check reports it', () => {
  const broken = structuredClone(loadCompose());
  (service(broken, 'agent-a').depends_on ?? {})['register'] = { condition: 'service_finished' };
  (broken.services['redis'] as Record<string, unknown>)['restart_policy'] = 'always';
  const problems = composeProblems(broken).join('\n');
  assert.match(problems, /\/services\/agent-a\/depends_on/);
  assert.match(problems, /\/services\/redis/);
});

test('given every service, when its references are resolved, then each dependency, named volume and bind mount exists', () => {
  const compose = loadCompose();
  const declared = new Set(Object.keys(compose.volumes ?? {}));
  const used = new Set<string>();
  for (const [name, svc] of Object.entries(compose.services)) {
    for (const dependency of Object.keys(svc.depends_on ?? {}))
      assert.ok(compose.services[dependency], `${name} depends on unknown service ${dependency}`);
    for (const volume of svc.volumes ?? []) {
      const source = volume.split(':')[0] ?? '';
      if (source.startsWith('.') || source.startsWith('/')) {
        assert.ok(existsSync(join(ROOT, source)), `${name} mounts ${source}, which does not exist`);
      } else {
        assert.ok(declared.has(source), `${name} uses volume ${source}, which is not declared`);
        used.add(source);
      }
    }
  }
  assert.deepEqual(
    [...declared].filter((v) => !used.has(v)),
    [],
    'declared volumes nobody uses',
  );
});

test('given every image, when inspected, then each is pinned to a tag other than latest', () => {
  for (const [name, svc] of Object.entries(loadCompose().services)) {
    assert.match(svc.image ?? '', /^[^:\s]+:[\w][\w.-]*$/, `${name} image`);
    assert.doesNotMatch(svc.image ?? '', /:latest$/, `${name} image`);
  }
});

test('given the two management servers, when compared, then they share one state volume at their state dir and Redis', () => {
  const compose = loadCompose();
  const stateMounts = SERVERS.map((name) => {
    const env = service(compose, name).environment ?? {};
    assert.equal(env['REDIS_URL'], 'redis://redis:6379', name);
    const stateDir = env['MESHRELAY_STATE_DIR'];
    const mount = (service(compose, name).volumes ?? []).find((v) => v.split(':')[1] === stateDir);
    assert.ok(mount, `${name} has no volume at its state dir ${String(stateDir)}`);
    return mount;
  });
  assert.equal(new Set(stateMounts).size, 1, 'the replicas do not share their state');
  assert.notEqual(
    service(compose, 'mgmt-0').environment?.['POD_NAME'],
    service(compose, 'mgmt-1').environment?.['POD_NAME'],
  );
});

test("given the servers' environment, when read by meshrelay-server's own config parser, then every variable is known and accepted", () => {
  const compose = loadCompose();
  for (const name of SERVERS) {
    const env = service(compose, name).environment ?? {};
    assert.deepEqual(
      Object.keys(env).filter((k) => !SERVER_ENV.has(k)),
      [],
      `${name} sets variables meshrelay-server does not read`,
    );
    const config = parseServerConfig([], env);
    assert.ok(config.serverHosts.includes(name), `${name} is not in its own certificate names`);
  }
});

test("given the agents' environment, when read by meshrelay-agent's own validator, then every variable is known and accepted", () => {
  const compose = loadCompose();
  for (const [name, cluster] of Object.entries(AGENTS)) {
    const env = service(compose, name).environment ?? {};
    assert.deepEqual(
      Object.keys(env).filter((k) => !AGENT_ENV.has(k)),
      [],
      `${name} sets variables meshrelay-agent does not read`,
    );
    const options = Object.fromEntries(Object.entries(env).map(([k, v]) => [AGENT_ENV.get(k)?.key ?? k, v]));
    const config = validateAgentOptions(options);
    assert.equal(config.cluster, cluster);
    assert.deepEqual(
      [...config.serverAddresses].sort(),
      SERVERS.map((s) => `${s}:9900`),
      `${name} does not know both replicas`,
    );
  }
});

test('given each agent, when its mounts are resolved, then it reads its example cluster read-only and the credentials register writes', () => {
  const compose = loadCompose();
  const register = service(compose, 'register');
  const script = (register.command ?? []).join('\n');
  const credentials = (register.volumes ?? [])[0]?.split(':') ?? [];
  for (const [name, cluster] of Object.entries(AGENTS)) {
    const agent = service(compose, name);
    assert.equal(agent.depends_on?.['register']?.condition, 'service_completed_successfully', name);
    assert.ok(
      (agent.volumes ?? []).includes(
        `./examples/${cluster}:${agent.environment?.['MESHRELAY_AGENT_MANIFESTS_DIR']}:ro`,
      ),
      `${name} manifests mount`,
    );
    assert.ok(
      (agent.volumes ?? []).includes(`${credentials[0]}:${credentials[1]}:ro`),
      `${name} does not mount the credentials read-only`,
    );
    assert.ok(script.includes(cluster), `register does not register ${cluster}`);
    // register writes <credentials>/<cluster>/token and ca.pem; the agent reads exactly those files.
    assert.equal(agent.environment?.['MESHRELAY_AGENT_TOKEN_FILE'], `${credentials[1]}/${cluster}/token`);
    assert.equal(agent.environment?.['MESHRELAY_AGENT_ROOT_CA_FILE'], `${credentials[1]}/${cluster}/ca.pem`);
  }
  assert.match(script, /--token-out "\$\$dir\/token" --ca-out "\$\$dir\/ca\.pem"/);
  assert.match(script, new RegExp(`dir=${credentials[1]}/\\$\\$cluster`));
});

test('given the register service, when meshctl is asked, then the flags it uses exist', async () => {
  const help = await run(process.execPath, [
    join(ROOT, 'packages/meshctl/bin/meshctl.js'),
    'cluster',
    'register',
    '--help',
  ]);
  assert.equal(help.code, 0, help.out);
  for (const flag of ['--token-out', '--ca-out'])
    assert.ok(help.out.includes(flag), `meshctl cluster register has no ${flag}`);
  assert.equal(service(loadCompose(), 'register').environment?.['MESHCTL_SERVER'], 'http://mgmt-0:8090');
});

test('given the Prometheus config, when promtool checks it, then it is valid and scrapes both servers on their metrics port', async () => {
  const check = await run('promtool', ['check', 'config', PROMETHEUS_FILE]);
  assert.equal(check.code, 0, check.out);
  const config = parse(readFileSync(PROMETHEUS_FILE, 'utf8')) as {
    scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
  };
  const targets = config.scrape_configs.flatMap((job) => job.static_configs.flatMap((s) => s.targets));
  const metricsPort = SERVER_ENV.get('MESHRELAY_METRICS_PORT')?.defaultValue;
  for (const server of SERVERS) assert.ok(targets.includes(`${server}:${metricsPort}`), `${server} is not scraped`);
  const prometheus = service(loadCompose(), 'prometheus');
  assert.ok(
    (prometheus.volumes ?? []).includes('./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro'),
  );
});

test("given the servers, when their binds and published ports are read, then API and metrics serve the other containers but are published on this machine's loopback only", () => {
  const compose = loadCompose();
  for (const name of SERVERS) {
    const svc = service(compose, name) as Service & { ports?: string[] };
    const config = parseServerConfig([], svc.environment ?? {});
    assert.equal(config.httpHost, '0.0.0.0', `${name}: register and the other containers call its API`);
    assert.equal(config.metricsHost, '0.0.0.0', `${name}: Prometheus scrapes it from its own container`);
    for (const port of [config.httpPort, config.metricsPort]) {
      const published = (svc.ports ?? []).filter((p) => p.endsWith(`:${port}`));
      assert.equal(published.length, 1, `${name} publishes port ${port} once`);
      assert.match(published[0] ?? '', /^127\.0\.0\.1:\d+:\d+$/, `${name} publishes port ${port} beyond loopback`);
    }
  }
});

test('given the register service, when it calls the API, then it reads the admin token the servers created in their shared state and says where it is', () => {
  const compose = loadCompose();
  const register = service(compose, 'register');
  const stateDir = service(compose, 'mgmt-0').environment?.['MESHRELAY_STATE_DIR'];
  const stateMount = (service(compose, 'mgmt-0').volumes ?? [])
    .find((v) => v.split(':')[1] === stateDir)
    ?.split(':')[0];
  assert.equal(register.environment?.['MESHRELAY_ADMIN_TOKEN_FILE'], `${stateDir}/admin-token`);
  assert.ok(
    (register.volumes ?? []).includes(`${stateMount}:${stateDir}:ro`),
    'register does not mount the server state read-only',
  );
  assert.match(
    (register.command ?? []).join('\n'),
    /echo "admin token: \$\$MESHRELAY_ADMIN_TOKEN_FILE in volume server-state/,
  );
});
