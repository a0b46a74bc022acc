// `npm start`: a real local Meshrelay — one management server, two relay agents
// on the example clusters in examples/, and Redis when one is available
// (REDIS_URL, or a redis-server binary on this machine; memory-only otherwise). Each agent serves
// xDS, and the proxyless gRPC demo (examples/grpc-demo/) runs on it: a greeter per cluster and a
// grpc-js-xds client in cluster-a that logs which cluster answered each call.
// Everything it writes goes under .run/ (recreated on each start; MESHRELAY_LOCAL_RUN_DIR names another
// directory), never into the source tree: the agents write resource statuses to .run/<cluster>/status,
// not beside the example manifests. Ctrl-C stops all.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const run = resolve(root, process.env['MESHRELAY_LOCAL_RUN_DIR'] ?? '.run');
const env = process.env;
const HTTP_PORT = Number(env['MESHRELAY_HTTP_PORT'] ?? 8090);
const RELAY_PORT = Number(env['MESHRELAY_RELAY_PORT'] ?? 9900);
const METRICS_PORT = Number(env['MESHRELAY_METRICS_PORT'] ?? 9091);
const REDIS_PORT = Number(env['MESHRELAY_LOCAL_REDIS_PORT'] ?? 6379);
const CLUSTERS = ['cluster-a', 'cluster-b'];
/** Each agent's xDS port, in CLUSTERS order (MESHRELAY_XDS_PORTS=PORT_A,PORT_B). */
const XDS_PORTS = (env['MESHRELAY_XDS_PORTS'] ?? '9610,9611').split(',').map(Number);
const children: ChildProcess[] = [];

/**
 * Starts a child whose output is prefixed with its name. When it exits the whole run stops,
 * unless it is `optional` (the gRPC demo): then the rest keeps running without it.
 */
function start(
  name: string,
  command: string,
  args: string[],
  extraEnv: Record<string, string> = {},
  optional = false,
): ChildProcess {
  const child = spawn(command, args, { cwd: root, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const prefix = `[${name}] `;
  for (const stream of [child.stdout, child.stderr]) {
    let buf = '';
    stream?.on('data', (data: Buffer) => {
      buf += data.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '') process.stdout.write(prefix + summarize(line) + '\n');
    });
  }
  child.on('exit', (code, signal) => {
    if (!stopping && optional) {
      console.error(`${prefix}exited (${signal ?? code}); the gRPC demo is off, everything else keeps running`);
    } else if (!stopping) {
      console.error(`${prefix}exited (${signal ?? code}); stopping everything`);
      void stopAll(1);
    }
  });
  return child;
}

/** Shortens pino JSON lines to "level msg key=value" for a readable terminal. */
function summarize(line: string): string {
  try {
    const rec = JSON.parse(line) as Record<string, unknown>;
    const level =
      ({ 20: 'debug', 30: 'info', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' } as Record<number, string>)[
        rec['level'] as number
      ] ?? '';
    const keep = ['cluster', 'generation', 'hash', 'resources', 'reason', 'code', 'missing', 'relayPort', 'httpPort'];
    const extras = keep
      .filter((k) => rec[k] !== undefined)
      .map(
        (k) =>
          `${k}=${typeof rec[k] === 'string' && k === 'hash' ? String(rec[k]).slice(0, 12) : JSON.stringify(rec[k])}`,
      );
    return `${level} ${String(rec['msg'])} ${extras.join(' ')}`.trim();
  } catch {
    return line;
  }
}

let stopping = false;
async function stopAll(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const child of [...children].reverse()) child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1500));
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function chooseRedis(): Promise<string | undefined> {
  if (env['REDIS_URL']) return env['REDIS_URL'];
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  mkdirSync(join(run, 'redis'), { recursive: true });
  const redis = start('redis', 'redis-server', [
    '--port',
    String(REDIS_PORT),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    join(run, 'redis'),
  ]);
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('redis-server did not start')), 10_000);
    redis.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('Ready to accept connections')) {
        clearTimeout(timer);
        ok();
      }
    });
  });
  return `redis://127.0.0.1:${REDIS_PORT}`;
}

const MANIFEST = /^[^.].*\.(ya?ml|json)$/i;

/**
 * The manifests an agent reads: links to every file of examples/<cluster>/ and of
 * examples/grpc-demo/<cluster>/ (the demo's workloads stay out of the example clusters, whose
 * contents other checks rely on). The agent follows these links and rescans them every 2 s, so an
 * edit under examples/ still reaches it at once; a file added or removed there is linked or
 * unlinked as it happens.
 */
function composeManifests(cluster: string): string {
  const dir = join(run, cluster, 'manifests');
  mkdirSync(dir, { recursive: true });
  for (const [source, prefix] of [
    [join(root, 'examples', cluster), ''],
    [join(root, 'examples', 'grpc-demo', cluster), 'grpc-demo-'],
  ] as const) {
    const relink = (): void => {
      const wanted = new Set(readdirSync(source).filter((f) => MANIFEST.test(f)));
      for (const link of readdirSync(dir).filter(
        (f) => f.startsWith(prefix) && (prefix !== '' || !f.startsWith('grpc-demo-')),
      )) {
        if (!wanted.has(link.slice(prefix.length))) rmSync(join(dir, link), { force: true });
      }
      for (const file of wanted)
        if (!existsSync(join(dir, prefix + file))) symlinkSync(join(source, file), join(dir, prefix + file));
    };
    relink();
    watch(source, () => {
      try {
        relink();
      } catch (err) {
        // A file renamed or removed while being linked: the next event relinks it.
        console.error(`run-local: linking ${source} into ${dir}: ${(err as Error).message}`);
      }
    }).unref();
  }
  return dir;
}

/** examples/workspaces.yaml and the demo's Workspace as one --workspaces-file. */
function composeWorkspaces(): string {
  const file = join(run, 'workspaces.yaml');
  const parts = ['workspaces.yaml', 'grpc-demo/workspaces.yaml'].map((f) =>
    readFileSync(join(root, 'examples', f), 'utf8').trimEnd(),
  );
  writeFileSync(file, `${parts.join('\n---\n')}\n`);
  return file;
}

/** The demo's greeters listen at the addresses examples/grpc-demo/<cluster>/greeter.yaml registers. */
function startGreeters(node: string): void {
  for (const cluster of CLUSTERS)
    start(`greeter ${cluster}`, node, ['examples/grpc-demo/server.ts', cluster], {}, true);
}

async function main(): Promise<void> {
  if (XDS_PORTS.length !== CLUSTERS.length || XDS_PORTS.some((p) => !Number.isInteger(p) || p <= 0 || p > 65_535)) {
    throw new Error(
      `MESHRELAY_XDS_PORTS must be ${CLUSTERS.length} ports separated by a comma, not "${env['MESHRELAY_XDS_PORTS'] ?? ''}"`,
    );
  }
  rmSync(run, { recursive: true, force: true });
  mkdirSync(run, { recursive: true });
  const redisUrl = await chooseRedis();
  const node = process.execPath;
  const stateDir = join(run, 'server');
  start(
    'server',
    node,
    [
      'packages/mgmt-server/bin/meshrelay-server.js',
      '--state-dir',
      stateDir,
      '--relay-port',
      String(RELAY_PORT),
      '--http-port',
      String(HTTP_PORT),
      '--metrics-port',
      String(METRICS_PORT),
      '--replica-name',
      'mgmt-0',
      '--workspaces-file',
      composeWorkspaces(),
    ],
    redisUrl ? { REDIS_URL: redisUrl } : {},
  );
  const api = `http://localhost:${HTTP_PORT}`;
  await waitFor(`${api}/healthz`, 30_000);
  // The server created its admin credential in its state directory on start; every API call needs it.
  const adminTokenFile = join(stateDir, 'admin-token');
  const adminToken = readFileSync(adminTokenFile, 'utf8').trim();

  startGreeters(node);
  for (const [i, cluster] of CLUSTERS.entries()) {
    const res = await fetch(`${api}/api/v1/clusters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ name: cluster }),
    });
    if (res.status !== 201) throw new Error(`registering ${cluster} failed: ${res.status} ${await res.text()}`);
    const reg = (await res.json()) as { token: string; relay: { address: string; caBundlePem: string } };
    const dir = join(run, cluster);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'token'), reg.token, { mode: 0o600 });
    writeFileSync(join(dir, 'relay-ca.pem'), reg.relay.caBundlePem);
    start(cluster, node, [
      'packages/agent/bin/meshrelay-agent.js',
      '--cluster',
      cluster,
      '--server-address',
      reg.relay.address,
      '--token-file',
      join(dir, 'token'),
      '--root-ca-file',
      join(dir, 'relay-ca.pem'),
      '--manifests-dir',
      composeManifests(cluster),
      '--follow-external-symlinks',
      'true',
      '--rescan-interval',
      '2s',
      '--status-dir',
      join(dir, 'status'),
      '--output-dir',
      join(dir, 'output'),
      '--state-dir',
      join(dir, 'state'),
      '--health-port',
      '0',
      '--access-log-port',
      '0',
      '--xds-port',
      String(XDS_PORTS[i]),
    ]);
  }
  // The client needs no wait: until cluster-a's agent serves the greeter's config, its calls fail and it retries.
  mkdirSync(join(run, 'grpc-demo'), { recursive: true });
  const demoLog = join(run, 'grpc-demo', 'client.log');
  start('grpc-demo', node, ['examples/grpc-demo/client.ts', String(XDS_PORTS[0]), demoLog], {}, true);

  console.log(`
Meshrelay is running${redisUrl ? ` (Redis at ${redisUrl})` : ' (memory only: no REDIS_URL and no redis-server found)'}.
  Web UI and HTTP API   ${api}/          (bound to 127.0.0.1; both need the admin token)
  Admin token           ${relative(root, adminTokenFile)}   (mode 0600; the UI asks for it once per tab;
                        meshctl run from this directory reads it there, elsewhere give
                        --state-dir ${stateDir} or MESHRELAY_ADMIN_TOKEN_FILE=${adminTokenFile})
  Prometheus metrics    http://localhost:${METRICS_PORT}/metrics   (open, bound to 127.0.0.1)
  Relay gRPC (mTLS)     localhost:${RELAY_PORT}
  xDS (proxyless gRPC)  ${CLUSTERS.map((c, i) => `localhost:${XDS_PORTS[i]} (${c})`).join('   ')}
  gRPC demo             a grpc-js-xds client in cluster-a calls greeter.global every second;
                        the greeters of both clusters answer (${relative(root, demoLog)}, examples/grpc-demo/)
  Agent outputs         .run/cluster-a/output/current/   .run/cluster-b/output/current/
  Resource statuses     .run/cluster-a/status/           .run/cluster-b/status/
  CLI                   npx meshctl cluster list        npx meshctl snapshot output cluster-b
Edit a manifest under examples/cluster-a/ and watch .run/cluster-b/output/current/ change. Ctrl-C stops everything.
`);
}

main().catch((err: unknown) => {
  console.error(`run-local: ${err instanceof Error ? err.message : String(err)}`);
  void stopAll(1);
});
