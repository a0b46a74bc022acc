// An end-to-end Meshrelay made of real processes: redis-server, management
// servers (meshrelay-server) and relay agents (meshrelay-agent), each a child
// process, wired over real gRPC with mTLS. Every process and directory is
// cleaned up through the test context.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import {
  freePort,
  spawnProcess,
  startFakeKubeApiServer,
  startRedisServer,
  waitFor,
  type FakeKubeApiServer,
  type ProcessHandle,
  type RedisServerHandle,
} from '@meshrelay/testkit';
import type { Resource } from '@meshrelay/api';

export const ROOT = resolve(import.meta.dirname, '..');
const SERVER_BIN = join(ROOT, 'packages/mgmt-server/bin/meshrelay-server.js');
const AGENT_BIN = join(ROOT, 'packages/agent/bin/meshrelay-agent.js');

export interface ServerProc {
  readonly name: string;
  readonly proc: ProcessHandle;
  readonly relayPort: number;
  readonly httpPort: number;
  readonly metricsPort: number;
  readonly api: string;
  readonly args: readonly string[];
}

export interface AgentProc {
  readonly cluster: string;
  readonly proc: ProcessHandle;
  readonly manifestsDir: string;
  readonly outputDir: string;
  readonly stateDir: string;
}

export interface OutputOnDisk {
  readonly hash: string;
  readonly resources: readonly Resource[];
  readonly provenance: readonly { cluster: string; inputHash: string; stale?: boolean }[];
}

export interface MeshOptions {
  readonly redis?: boolean;
  readonly serverFlags?: readonly string[];
  /**
   * `kubernetes`: the servers use `--registry kubernetes` against a fake kube-apiserver (the
   * test double from @meshrelay/testkit) and, like pods, each server process gets a state
   * directory of its own that a restart does not keep. Default `file`: one shared state directory.
   */
  readonly registry?: 'file' | 'kubernetes';
}

/** The management namespace of the kubernetes-registry mesh. */
export const MESH_NAMESPACE = 'gloo-mesh';

export class Mesh {
  readonly dir: string;
  readonly redis: RedisServerHandle | undefined;
  readonly servers: ServerProc[] = [];
  readonly agents = new Map<string, AgentProc>();
  /** The fake kube-apiserver of a kubernetes-registry mesh. */
  readonly kube: FakeKubeApiServer | undefined;
  readonly #stateDir: string;
  readonly #serverFlags: readonly string[];
  readonly #credentials = new Map<string, { tokenFile: string; caFile: string }>();
  #serverStarts = 0;
  /** Each server's flags other than where it keeps its state (those may change at a restart). */
  readonly #baseArgs = new Map<string, readonly string[]>();

  private constructor(
    dir: string,
    redis: RedisServerHandle | undefined,
    serverFlags: readonly string[],
    kube: FakeKubeApiServer | undefined,
  ) {
    this.dir = dir;
    this.redis = redis;
    this.kube = kube;
    this.#stateDir = join(dir, 'server-state');
    this.#serverFlags = serverFlags;
  }

  static async start(t: TestContext, options: MeshOptions = {}): Promise<Mesh> {
    const dir = mkdtempSync(join(tmpdir(), 'meshrelay-e2e-'));
    const redis = options.redis === false ? undefined : await startRedisServer();
    const kube = options.registry === 'kubernetes' ? await startFakeKubeApiServer() : undefined;
    const mesh = new Mesh(dir, redis, options.serverFlags ?? [], kube);
    t.after(async () => {
      if (process.env['E2E_DEBUG'] !== undefined) mesh.dumpLogs(Number(process.env['E2E_DEBUG']) || 40);
      await mesh.stopAll();
      await kube?.stop();
      if (process.env['E2E_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    });
    return mesh;
  }

  /** Where a server process keeps its state: shared, or (kubernetes) new for every process start. */
  #stateFlags(name: string): string[] {
    if (!this.kube) return ['--state-dir', this.#stateDir];
    const kubeconfig = join(this.dir, 'kubeconfig');
    if (!existsSync(kubeconfig)) writeFileSync(kubeconfig, this.kube.kubeConfigYaml(), { mode: 0o600 });
    return [
      '--state-dir',
      join(this.dir, `server-state-${name}-${this.#serverStarts++}`),
      '--registry',
      'kubernetes',
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      MESH_NAMESPACE,
    ];
  }

  /** Starts a management server process on the mesh's Redis and durable state (see MeshOptions.registry). */
  async startServer(name = `mgmt-${this.servers.length}`, extraFlags: readonly string[] = []): Promise<ServerProc> {
    const [relayPort, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
    const base = [
      '--relay-host',
      '127.0.0.1',
      '--http-host',
      '127.0.0.1',
      '--relay-port',
      String(relayPort),
      '--http-port',
      String(httpPort),
      '--metrics-port',
      String(metricsPort),
      '--replica-name',
      name,
      '--heartbeat-interval',
      '300',
      '--heartbeat-timeout',
      '2000',
      '--translation-debounce',
      '20',
      '--safe-start-window',
      '0',
      '--log-level',
      'debug',
      ...this.#serverFlags,
      ...extraFlags,
    ];
    this.#baseArgs.set(name, base);
    const args = [SERVER_BIN, ...this.#stateFlags(name), ...base];
    const proc = await spawnProcess({
      name,
      command: process.execPath,
      args,
      env: this.redis ? { REDIS_URL: this.redis.url } : { REDIS_URL: undefined },
    });
    const server: ServerProc = {
      name,
      proc,
      relayPort,
      httpPort,
      metricsPort,
      api: `http://127.0.0.1:${httpPort}`,
      args,
    };
    await proc.waitForLine(/management server started/, 30_000);
    this.servers.push(server);
    return server;
  }

  /**
   * Starts a server process again with the same flags and ports (a restart of that replica); with
   * the kubernetes registry in a new state directory, as a replaced pod would start.
   */
  async restartServer(server: ServerProc): Promise<ServerProc> {
    if (server.proc.running) await server.proc.stop(5000);
    const args = [SERVER_BIN, ...this.#stateFlags(server.name), ...(this.#baseArgs.get(server.name) ?? [])];
    const proc = await spawnProcess({
      name: server.name,
      command: process.execPath,
      args,
      env: this.redis ? { REDIS_URL: this.redis.url } : { REDIS_URL: undefined },
    });
    const restarted: ServerProc = { ...server, proc, args };
    this.servers[this.servers.indexOf(server)] = restarted;
    await proc.waitForLine(/management server started/, 30_000);
    return restarted;
  }

  /** Restarts an agent on its existing manifests, output and state directories. */
  async restartAgent(cluster: string, servers?: readonly ServerProc[]): Promise<AgentProc> {
    const agent = this.agents.get(cluster);
    if (agent?.proc.running) await agent.proc.stop(3000);
    return this.startAgent(cluster, { keepDirs: true, ...(servers ? { servers } : {}) });
  }

  /** How many outputs the agent has applied so far (its "output applied" log lines). */
  appliedCount(cluster: string): number {
    return this.agents.get(cluster)?.proc.lines.filter((l) => l.includes('"output applied"')).length ?? 0;
  }

  /**
   * Waits until the agent's log reports applying the output now on disk. The
   * agent writes the file before it logs, and its log reaches this process
   * through a pipe, so a count taken right after the file appears can miss
   * the last apply.
   */
  async waitForAppliedLogged(cluster: string, timeoutMs = 10_000): Promise<void> {
    const agent = this.agents.get(cluster);
    if (!agent) throw new Error(`no agent for ${cluster}`);
    await waitFor(
      () => {
        const hash = this.readOutput(cluster)?.hash;
        return (
          hash !== undefined &&
          agent.proc.lines.some((l) => l.includes('"output applied"') && l.includes(`"hash":"${hash}"`))
        );
      },
      {
        timeoutMs,
        intervalMs: 50,
        message: `${cluster}'s agent did not log applying the output on disk within ${timeoutMs} ms`,
      },
    );
  }

  /** The admin token the servers created on first start: in their shared state directory, or (kubernetes) a Secret. */
  adminToken(): string {
    if (!this.kube) return readFileSync(join(this.#stateDir, 'admin-token'), 'utf8').trim();
    const data = this.kube.get('Secret', 'meshrelay-admin-token', MESH_NAMESPACE)?.['data'] as
      Record<string, string> | undefined;
    if (data?.['token'] === undefined) throw new Error('no admin token Secret in the fake kube-apiserver');
    return Buffer.from(data['token'], 'base64').toString('utf8').trim();
  }

  /** The header every /api/v1 call needs. */
  authorization(): { authorization: string } {
    return { authorization: `Bearer ${this.adminToken()}` };
  }

  async metrics(server: ServerProc): Promise<string> {
    return (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  }

  /** Registers a cluster through the first server's HTTP API and keeps its token and CA for the agent. */
  async register(cluster: string, body: Record<string, unknown> = {}): Promise<void> {
    const res = await fetch(`${this.#anyServer().api}/api/v1/clusters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.authorization() },
      body: JSON.stringify({ name: cluster, ...body }),
    });
    if (res.status !== 201) throw new Error(`register ${cluster}: ${res.status} ${await res.text()}`);
    const reg = (await res.json()) as { token: string; relay: { caBundlePem: string } };
    const dir = join(this.dir, 'credentials', cluster);
    mkdirSync(dir, { recursive: true });
    const tokenFile = join(dir, 'token');
    const caFile = join(dir, 'relay-ca.pem');
    writeFileSync(tokenFile, reg.token, { mode: 0o600 });
    writeFileSync(caFile, reg.relay.caBundlePem);
    this.#credentials.set(cluster, { tokenFile, caFile });
  }

  /**
   * Starts an agent for a registered cluster. Its manifests are a copy of
   * `examples/<from>` (or an empty directory) that the test may edit.
   * A second replica of the same cluster passes a `name` of its own (its key in
   * `agents`) and `keepDirs`, so it shares the first one's manifests, output and
   * state dirs; `extraFlags` are appended (e.g. leader-election flags).
   */
  async startAgent(
    cluster: string,
    options: {
      from?: string;
      servers?: readonly ServerProc[];
      keepDirs?: boolean;
      name?: string;
      extraFlags?: readonly string[];
    } = {},
  ): Promise<AgentProc> {
    const creds = this.#credentials.get(cluster);
    if (!creds) throw new Error(`cluster ${cluster} was not registered in this mesh`);
    const base = join(this.dir, 'agents', cluster);
    const manifestsDir = join(base, 'manifests');
    const outputDir = join(base, 'output');
    const stateDir = join(base, 'state');
    if (!options.keepDirs || !existsSync(manifestsDir)) {
      rmSync(base, { recursive: true, force: true });
      mkdirSync(manifestsDir, { recursive: true });
      if (options.from)
        cpSync(isAbsolute(options.from) ? options.from : join(ROOT, 'examples', options.from), manifestsDir, {
          recursive: true,
        });
    }
    const servers = options.servers ?? this.servers;
    const name = options.name ?? cluster;
    const proc = await spawnProcess({
      name: `agent-${name}`,
      command: process.execPath,
      args: [
        AGENT_BIN,
        '--cluster',
        cluster,
        '--server-address',
        servers.map((s) => `localhost:${s.relayPort}`).join(','),
        '--token-file',
        creds.tokenFile,
        '--root-ca-file',
        creds.caFile,
        '--manifests-dir',
        manifestsDir,
        '--output-dir',
        outputDir,
        '--state-dir',
        stateDir,
        '--health-port',
        '0',
        '--access-log-port',
        '0',
        '--heartbeat-interval',
        '300ms',
        '--heartbeat-timeout',
        '2s',
        '--debounce-ms',
        '50',
        '--log-level',
        'debug',
        ...(options.extraFlags ?? []),
      ],
    });
    const agent: AgentProc = { cluster, proc, manifestsDir, outputDir, stateDir };
    this.agents.set(name, agent);
    return agent;
  }

  /** The output the agent has applied on disk (its `current` version), if any. */
  readOutput(cluster: string): OutputOnDisk | undefined {
    const agent = this.agents.get(cluster);
    if (!agent) throw new Error(`no agent for ${cluster}`);
    const file = join(agent.outputDir, 'current', 'snapshot.json');
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as OutputOnDisk;
    } catch {
      return undefined;
    }
  }

  /** Polls until the agent's applied output satisfies `check`; returns it. */
  async waitForOutput(
    cluster: string,
    check: (o: OutputOnDisk) => boolean,
    timeoutMs = 20_000,
    message = `output of ${cluster}`,
  ): Promise<OutputOnDisk> {
    let found: OutputOnDisk | undefined;
    await waitFor(
      () => {
        found = this.readOutput(cluster);
        return found !== undefined && check(found);
      },
      { timeoutMs, intervalMs: 100, message: `${message} did not arrive within ${timeoutMs} ms` },
    );
    return found as OutputOnDisk;
  }

  writeManifest(cluster: string, file: string, yaml: string): void {
    const agent = this.agents.get(cluster);
    if (!agent) throw new Error(`no agent for ${cluster}`);
    writeFileSync(join(agent.manifestsDir, file), yaml);
  }

  async api<T>(path: string, server = this.#anyServer(), init?: RequestInit): Promise<T> {
    const res = await fetch(`${server.api}${path}`, {
      ...init,
      headers: { ...(init?.headers as Record<string, string> | undefined), ...this.authorization() },
    });
    if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`);
    return (res.status === 204 ? undefined : await res.json()) as T;
  }

  async patchCluster(cluster: string, body: Record<string, unknown>, server = this.#anyServer()): Promise<void> {
    await this.api(`/api/v1/clusters/${cluster}`, server, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /** Prints the last lines of every process (E2E_DEBUG=N), to see why a scenario failed. */
  dumpLogs(lines: number): void {
    const procs = [...this.servers.map((s) => s.proc), ...[...this.agents.values()].map((a) => a.proc)];
    for (const proc of procs) {
      console.error(`----- ${proc.name} (last ${lines} lines)`);
      for (const line of proc.lines.slice(-lines)) console.error(line.length > 400 ? `${line.slice(0, 400)}…` : line);
    }
  }

  async stopAll(): Promise<void> {
    for (const a of this.agents.values()) a.proc.resume();
    for (const s of this.servers) s.proc.resume();
    await Promise.all([...this.agents.values()].map((a) => a.proc.stop(3000)));
    await Promise.all(this.servers.map((s) => s.proc.stop(5000)));
    await this.redis?.stop();
  }

  #anyServer(): ServerProc {
    const server = this.servers.find((s) => s.proc.running);
    if (!server) throw new Error('no management server is running');
    return server;
  }
}

/**
 * A third example cluster for fault tests: cluster-b's manifests with its own
 * addresses, zone and gateway, plus a VirtualDestination only it defines (so
 * its absence would remove resources from every other cluster's output).
 */
export function makeClusterC(dir: string): string {
  const target = join(dir, 'fixture-cluster-c');
  mkdirSync(target, { recursive: true });
  for (const file of ['eastwest-gateway.yaml', 'nodes.yaml', 'reviews.yaml']) {
    const text = readFileSync(join(ROOT, 'examples', 'cluster-b', file), 'utf8')
      .replaceAll('10.2.', '10.3.')
      .replaceAll('203.0.113.20', '203.0.113.30')
      .replaceAll('node-b', 'node-c')
      .replaceAll('us-west', 'eu-north')
      .replaceAll('cluster-b', 'cluster-c');
    writeFileSync(join(target, file), text);
  }
  writeFileSync(join(target, 'vd-ratings.yaml'), virtualDestinationYaml('ratings', 'ratings.global'));
  return target;
}

/** YAML for a VirtualDestination in cluster manifests. */
export function virtualDestinationYaml(name: string, host: string, port = 8080): string {
  return `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata:
  name: ${name}
  namespace: default
spec:
  hosts: ["${host}"]
  services:
    - labels: { app: ${name} }
  ports:
    - number: ${port}
      protocol: HTTP
`;
}

export function hasResource(output: OutputOnDisk, kind: string, name: string): boolean {
  return output.resources.some((r) => r.kind === kind && r.metadata.name.includes(name));
}

/** One row of GET /api/v1/resources. */
export interface ListedResource {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly cluster: string;
  /** `Kind/namespace/name@cluster`, as outputs name it in meshrelay.io/sources. */
  readonly source: string;
  readonly approval: string;
  readonly message: string;
  readonly outputs: readonly { kind: string; name: string }[];
}

/** GET /api/v1/resources with an optional query (`kind=…&cluster=…&approval=…`). */
export async function listResources(mesh: Mesh, query = ''): Promise<ListedResource[]> {
  return (await mesh.api<{ resources: ListedResource[] }>(`/api/v1/resources${query ? `?${query}` : ''}`)).resources;
}
