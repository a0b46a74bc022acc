/**
 * A test world for proxyless gRPC end to end: redis-server, a real meshrelay-server, a real
 * agent per cluster serving xDS (`--xds-port`), real gRPC backend processes on loopback
 * addresses (127.0.0.N, one port for all), each registered in its cluster's manifests as a
 * ready EndpointSlice endpoint of a Pod labelled with its version, on a Node of its locality.
 * Clients are real grpc-js-xds processes whose bootstrap points at their cluster's agent.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { promisify } from 'node:util';
import { freePort, spawnProcess, waitFor, type ProcessHandle } from '@meshrelay/testkit';
import { Mesh } from '../mesh.ts';
import type { Picks } from './calls.ts';
import type { Identity } from './who.ts';

const run = promisify(execFile);
const HERE = import.meta.dirname;
export const SERVICE_PORT = 9080;
export const NAMESPACE = 'bookinfo';

export interface BackendSpec {
  readonly service: string;
  readonly cluster: string;
  readonly version: string;
  /** Last octet of its 127.0.0.N address: distinct per backend in the world. */
  readonly octet: number;
  /** Its Pod's `meshrelay.io/instance` label: the identity an instance address is kept under. */
  readonly instance?: string;
}

export interface Backend extends BackendSpec {
  readonly address: string;
  proc: ProcessHandle;
}

/** A long-running client: its running totals (see XdsWorld.session). */
export interface ClientSession {
  readonly proc: ProcessHandle;
  latest(): Picks;
}

export type { Picks } from './calls.ts';

/** Region and zone of each cluster's single Node. */
const LOCALITY: Readonly<Record<string, { region: string; zone: string }>> = {
  'cluster-a': { region: 'us-east', zone: 'us-east-1a' },
  'cluster-b': { region: 'us-west', zone: 'us-west-2a' },
};

function nodeYaml(cluster: string): string {
  const l = LOCALITY[cluster] as { region: string; zone: string };
  return `apiVersion: v1\nkind: Node\nmetadata:\n  name: node-${cluster}\n  labels:\n    topology.kubernetes.io/region: ${l.region}\n    topology.kubernetes.io/zone: ${l.zone}\n`;
}

/** A Service, its EndpointSlice and Pods for the backends of one service in one cluster. */
export function serviceYaml(
  service: string,
  cluster: string,
  backends: readonly BackendSpec[],
  backendPort: number,
): string {
  const pod = (b: BackendSpec): string => `${service}-${b.version}-${b.octet}`;
  const docs = [
    `apiVersion: v1\nkind: Service\nmetadata: { name: ${service}, namespace: ${NAMESPACE}, labels: { app: ${service} } }\nspec:\n  selector: { app: ${service} }\n  ports:\n    - { name: grpc, port: ${SERVICE_PORT}, targetPort: ${backendPort}, protocol: TCP }\n`,
    `apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: ${service}-slice\n  namespace: ${NAMESPACE}\n  labels: { kubernetes.io/service-name: ${service} }\naddressType: IPv4\nports:\n  - { name: grpc, port: ${backendPort}, protocol: TCP }\nendpoints:\n${backends
      .map(
        (b) =>
          `  - addresses: ["127.0.0.${b.octet}"]\n    conditions: { ready: true }\n    nodeName: node-${cluster}\n    targetRef: { kind: Pod, name: ${pod(b)}, namespace: ${NAMESPACE} }\n`,
      )
      .join('')}`,
    ...backends.map(
      (b) =>
        `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${pod(b)}\n  namespace: ${NAMESPACE}\n  labels: { app: ${service}, version: ${b.version}${b.instance ? `, meshrelay.io/instance: ${b.instance}` : ''} }\nspec: { serviceAccountName: ${service}, nodeName: node-${cluster} }\nstatus: { phase: Running, podIP: 127.0.0.${b.octet}, podIPs: [{ ip: 127.0.0.${b.octet} }] }\n`,
    ),
  ];
  return docs.join('---\n');
}

export class XdsWorld {
  readonly mesh: Mesh;
  readonly backendPort: number;
  readonly xdsPorts = new Map<string, number>();
  readonly backends: Backend[] = [];
  readonly #clients = new Set<ReturnType<typeof execFile>>();
  #caller: Caller | undefined;

  private constructor(mesh: Mesh, backendPort: number) {
    this.mesh = mesh;
    this.backendPort = backendPort;
  }

  /**
   * Starts redis, a server and one xDS-serving agent per cluster; stops everything in t.after.
   * `options` adds flags to the server and to every agent.
   */
  static async start(
    t: TestContext,
    clusters: readonly string[],
    options: { readonly serverFlags?: readonly string[]; readonly agentFlags?: readonly string[] } = {},
  ): Promise<XdsWorld> {
    const mesh = await Mesh.start(t);
    const world = new XdsWorld(mesh, await freePort());
    t.after(() => world.stopBackends());
    await mesh.startServer(undefined, options.serverFlags ?? []);
    for (const cluster of clusters) await mesh.register(cluster);
    for (const cluster of clusters) {
      const port = await freePort();
      world.xdsPorts.set(cluster, port);
      const agent = await mesh.startAgent(cluster, {
        extraFlags: ['--xds-port', String(port), ...(options.agentFlags ?? [])],
      });
      await agent.proc.waitForLine(/xds server listening/, 30_000);
      mesh.writeManifest(cluster, 'node.yaml', nodeYaml(cluster));
    }
    return world;
  }

  /** Starts backend processes and registers every service's backends in its cluster's manifests. */
  async addBackends(specs: readonly BackendSpec[]): Promise<void> {
    for (const spec of specs) {
      const address = `127.0.0.${spec.octet}`;
      this.backends.push({ ...spec, address, proc: await this.#spawn(spec, address) });
    }
    this.writeServices();
  }

  async #spawn(spec: BackendSpec, address: string): Promise<ProcessHandle> {
    const identity: Identity = {
      cluster: spec.cluster,
      version: spec.version,
      locality: JSON.stringify(LOCALITY[spec.cluster]),
      address,
    };
    const proc = await spawnProcess({
      name: `backend-${spec.service}-${spec.octet}`,
      command: process.execPath,
      args: [join(HERE, 'backend.ts'), JSON.stringify(identity), String(this.backendPort)],
    });
    await proc.waitForLine(/backend listening/, 30_000);
    return proc;
  }

  #backend(octet: number): Backend {
    const found = this.backends.find((b) => b.octet === octet);
    if (!found) throw new Error(`no backend 127.0.0.${octet} in this world`);
    return found;
  }

  /**
   * Stops a backend process; it stays registered (ready) in the manifests, as a crashed pod does until probes notice.
   */
  async stopBackend(octet: number): Promise<void> {
    await this.#backend(octet).proc.stop();
  }

  /** Starts a stopped backend again on the same address. */
  async restartBackend(octet: number): Promise<void> {
    const b = this.#backend(octet);
    b.proc = await this.#spawn(b, b.address);
  }

  /** Stops a backend and takes it out of its cluster's manifests (its EndpointSlice endpoint goes). */
  async removeBackend(octet: number): Promise<void> {
    const b = this.#backend(octet);
    await b.proc.stop();
    this.backends.splice(this.backends.indexOf(b), 1);
    this.writeServices();
  }

  /** Rewrites each (cluster, service) manifest from the backends registered now. */
  writeServices(): void {
    const groups = new Map<string, Backend[]>();
    for (const b of this.backends)
      groups.set(`${b.cluster}\u0000${b.service}`, [...(groups.get(`${b.cluster}\u0000${b.service}`) ?? []), b]);
    for (const [key, list] of groups) {
      const [cluster, service] = key.split('\u0000') as [string, string];
      this.mesh.writeManifest(cluster, `svc-${service}.yaml`, serviceYaml(service, cluster, list, this.backendPort));
    }
  }

  /** The bootstrap a client of `cluster` uses: its agent's xDS port and the cluster's locality. */
  bootstrap(cluster: string): string {
    const l = LOCALITY[cluster] as { region: string; zone: string };
    return JSON.stringify({
      xds_servers: [
        {
          server_uri: `localhost:${this.xdsPorts.get(cluster) ?? 0}`,
          channel_creds: [{ type: 'insecure' }],
          server_features: ['xds_v3'],
        },
      ],
      node: {
        id: `sidecar~127.0.0.1~client.${NAMESPACE}~${NAMESPACE}.svc.cluster.local`,
        locality: { region: l.region, zone: l.zone },
      },
    });
  }

  /**
   * Makes `calls` calls from `cluster` to `host` with `headers` on a new channel with its own xDS
   * client (a fresh subscription to the agent, as a new workload has), in the world's caller
   * process; returns the counts.
   */
  async call(
    cluster: string,
    host: string,
    calls: number,
    headers: Readonly<Record<string, string>> = {},
    deadlineMs = 10_000,
  ): Promise<Picks> {
    this.#caller ??= new Caller();
    return this.#caller.run({
      target: `xds:///${host}:${SERVICE_PORT}`,
      calls,
      headers,
      deadlineMs,
      bootstrap: this.bootstrap(cluster),
    });
  }

  /**
   * As call, from a client process of its own that exits afterwards: a workload that starts,
   * calls and goes away (its ADS stream ends with the process).
   */
  async callFromNewProcess(
    cluster: string,
    host: string,
    calls: number,
    headers: Readonly<Record<string, string>> = {},
    deadlineMs = 10_000,
  ): Promise<Picks> {
    const args = [
      join(HERE, 'client.ts'),
      `xds:///${host}:${SERVICE_PORT}`,
      String(calls),
      ...Object.entries(headers).map(([k, v]) => `${k}=${v}`),
    ];
    const { stdout } = await run(process.execPath, args, {
      env: {
        ...process.env,
        GRPC_XDS_BOOTSTRAP_CONFIG: this.bootstrap(cluster),
        CLIENT_DEADLINE_MS: String(deadlineMs),
      },
      timeout: 170_000,
      maxBuffer: 1 << 20,
    });
    const last = stdout.trim().split('\n').pop() ?? '{}';
    return JSON.parse(last) as Picks;
  }

  /**
   * Starts a client process in `cluster` that calls `host` until stopped, on one channel (so it
   * keeps the xDS config it holds, as a long-lived workload does). `env` adds to its environment
   * (e.g. a grpc-js-xds feature switched off). Stopped in t.after.
   */
  async session(
    t: TestContext,
    cluster: string,
    host: string,
    env: Readonly<Record<string, string>> = {},
  ): Promise<ClientSession> {
    const proc = await spawnProcess({
      name: `client-${cluster}`,
      command: process.execPath,
      args: [join(HERE, 'client.ts'), `xds:///${host}:${SERVICE_PORT}`, 'forever'],
      env: { ...process.env, ...env, GRPC_XDS_BOOTSTRAP_CONFIG: this.bootstrap(cluster), CLIENT_DEADLINE_MS: '2000' },
    });
    t.after(() => proc.stop());
    const latest = (): Picks => {
      const line = [...proc.lines].reverse().find((l) => l.startsWith('picks '));
      return line === undefined ? { counts: {}, errors: {} } : (JSON.parse(line.slice('picks '.length)) as Picks);
    };
    return { proc, latest };
  }

  /** Calls until `check` holds on a small sample (the config is still travelling), within a deadline. */
  async until(
    cluster: string,
    host: string,
    check: (p: Picks) => boolean,
    headers: Readonly<Record<string, string>> = {},
    timeoutMs = 90_000,
    from: 'caller' | 'new-process' = 'caller',
  ): Promise<Picks> {
    let last: Picks = { counts: {}, errors: {} };
    const sample = (): Promise<Picks> =>
      from === 'caller' ? this.call(cluster, host, 20, headers) : this.callFromNewProcess(cluster, host, 20, headers);
    await waitFor(async () => check((last = await sample())), {
      timeoutMs,
      intervalMs: 200,
      message: `calls from ${cluster} to ${host} never met the condition; last picks ${JSON.stringify(last)}`,
    });
    return last;
  }

  async stopBackends(): Promise<void> {
    await this.#caller?.stop();
    for (const b of this.backends) if (b.proc.running) await b.proc.stop();
  }
}

interface CallRun {
  readonly target: string;
  readonly calls: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly deadlineMs: number;
  readonly bootstrap: string;
}

/** The world's caller.ts process: runs of calls sent on its stdin, answered by id on its stdout. */
class Caller {
  readonly #proc: ChildProcessWithoutNullStreams;
  readonly #waiting = new Map<number, { resolve: (p: Picks) => void; reject: (e: Error) => void }>();
  readonly #stderr: string[] = [];
  #next = 1;

  constructor() {
    this.#proc = spawn(process.execPath, [join(HERE, 'caller.ts')], { stdio: 'pipe' });
    createInterface({ input: this.#proc.stdout }).on('line', (line) => {
      if (!line.startsWith('result ')) return;
      const answer = JSON.parse(line.slice('result '.length)) as { id: number; picks?: Picks; error?: string };
      const waiter = this.#waiting.get(answer.id);
      this.#waiting.delete(answer.id);
      if (answer.picks) waiter?.resolve(answer.picks);
      else waiter?.reject(new Error(`caller: ${answer.error ?? 'no picks'}`));
    });
    createInterface({ input: this.#proc.stderr }).on('line', (line) => this.#stderr.push(line));
    this.#proc.on('exit', (code, signal) => {
      const err = new Error(`caller.ts exited (${code ?? signal}): ${this.#stderr.slice(-20).join('\n')}`);
      for (const waiter of this.#waiting.values()) waiter.reject(err);
      this.#waiting.clear();
    });
  }

  run(run: CallRun): Promise<Picks> {
    const id = this.#next++;
    return new Promise<Picks>((resolve, reject) => {
      // Each call has its own deadline; this bounds a run whose answer never comes.
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(new Error(`caller.ts did not answer run ${id} (${run.calls} calls to ${run.target}) in 170 s`));
      }, 170_000);
      const settle =
        <T>(f: (v: T) => void) =>
        (v: T) => {
          clearTimeout(timer);
          f(v);
        };
      this.#waiting.set(id, { resolve: settle(resolve), reject: settle(reject) });
      this.#proc.stdin.write(`${JSON.stringify({ id, ...run })}\n`);
    });
  }

  async stop(): Promise<void> {
    if (this.#proc.exitCode !== null || this.#proc.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#proc.once('exit', resolve));
    this.#proc.stdin.end();
    const kill = setTimeout(() => this.#proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
  }
}

/** Picks summed by the version part of the identity key (`cluster/version/address`). */
export function byVersion(p: Picks): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(p.counts)) {
    const version = key.split('/')[1] ?? '';
    out[version] = (out[version] ?? 0) + n;
  }
  return out;
}

/** Picks summed by cluster. */
export function byCluster(p: Picks): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(p.counts)) {
    const cluster = key.split('/')[0] ?? '';
    out[cluster] = (out[cluster] ?? 0) + n;
  }
  return out;
}
