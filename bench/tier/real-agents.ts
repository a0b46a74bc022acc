/**
 * The real agents of the tier bench: for a sample of clusters, a `meshrelay-agent` process with the
 * file provider reading that cluster's generated manifests from a directory and the file applier
 * (`FileOutputWriter`) writing its outputs. Their log lines become the same events the load
 * generators report (acked, applied with the provenance digest), so the bench's waits treat both
 * alike; a change to one of their clusters is made by rewriting the service's manifest file, so the
 * agent's own discovery runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { MeshrelayError, type InputSnapshot, type Provenance, type Resource } from '@meshrelay/api';
import { AGENT_BIN, manifestFiles, warmCompileCache, writeManifests } from '../agent-footprint.ts';
import { cpuSeconds } from '../proc-stats.ts';
import { applyKindChange, type KindChange } from './change-kinds.ts';
import type { LoadGeneratorEvent } from './load-generator.ts';
import { provenanceDigest } from './load-generator.ts';
import { stopChild, type RegisteredCluster } from './processes.ts';

interface RealAgent {
  readonly cluster: string;
  readonly root: string;
  resources: Resource[];
  proc: ChildProcess | undefined;
  ended: string | undefined;
}

export class RealAgents {
  readonly #agents = new Map<string, RealAgent>();
  readonly #events: LoadGeneratorEvent[];
  readonly #address: string;
  readonly #caFile: string;
  readonly #tokens: ReadonlyMap<string, string>;

  private constructor(
    events: LoadGeneratorEvent[],
    address: string,
    caFile: string,
    tokens: ReadonlyMap<string, string>,
  ) {
    this.#events = events;
    this.#address = address;
    this.#caFile = caFile;
    this.#tokens = tokens;
  }

  /** Writes each cluster's manifests under `root`/<cluster>; no process runs until `start`. */
  static async prepare(options: {
    root: string;
    inputs: readonly InputSnapshot[];
    clusters: readonly RegisteredCluster[];
    caPem: string;
    address: string;
    events: LoadGeneratorEvent[];
  }): Promise<RealAgents> {
    const caFile = join(options.root, 'relay-ca.pem');
    await mkdir(options.root, { recursive: true });
    await writeFile(caFile, options.caPem);
    // As an install or image build does: the agents then start without transpiling their sources.
    if (options.inputs.length > 0) await warmCompileCache();
    const agents = new RealAgents(
      options.events,
      options.address,
      caFile,
      new Map(options.clusters.map((c) => [c.name, c.token])),
    );
    for (const input of options.inputs) {
      const root = join(options.root, input.cluster);
      await writeManifests(join(root, 'manifests'), input.resources);
      agents.#agents.set(input.cluster, {
        cluster: input.cluster,
        root,
        resources: [...input.resources],
        proc: undefined,
        ended: undefined,
      });
    }
    return agents;
  }

  get clusters(): string[] {
    return [...this.#agents.keys()];
  }

  has(cluster: string): boolean {
    return this.#agents.has(cluster);
  }

  /** Why an agent process ended, if one did. */
  get ended(): string | undefined {
    for (const a of this.#agents.values()) if (a.ended !== undefined) return `meshrelay-agent ${a.cluster} ${a.ended}`;
    return undefined;
  }

  /** Starts the agent of `cluster` (its discovery reads the manifests, then it registers and relays). */
  start(cluster: string): void {
    const agent = this.#get(cluster);
    if (agent.proc) return;
    const args = [
      AGENT_BIN,
      '--cluster',
      cluster,
      '--manifests-dir',
      join(agent.root, 'manifests'),
      '--output-dir',
      join(agent.root, 'out'),
      '--state-dir',
      join(agent.root, 'state'),
      '--server-address',
      this.#address,
      '--token',
      this.#tokens.get(cluster) ?? '',
      '--root-ca-file',
      this.#caFile,
      '--health-port',
      '0',
      '--access-log-port',
      '0',
      '--log-level',
      'info',
    ];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    agent.proc = proc;
    // MESHRELAY_BENCH_AGENT_LOG_DIR=<dir> keeps each real agent's whole log (<cluster>.log) to read a run afterwards.
    const logDir = process.env['MESHRELAY_BENCH_AGENT_LOG_DIR'];
    const log = logDir === undefined ? undefined : createWriteStream(join(logDir, `${cluster}.log`), { flags: 'a' });
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      log?.write(`${line}\n`);
      this.#onLine(cluster, line);
    });
    proc.once('exit', () => log?.end());
    createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', (line) =>
      process.stderr.write(`meshrelay-agent ${cluster}: ${line}\n`),
    );
    proc.once('exit', (code, signal) => (agent.ended = `exited with ${code ?? signal}`));
  }

  pid(cluster: string): number | undefined {
    return this.#get(cluster).proc?.pid;
  }

  /** CPU seconds the agent processes have used so far, by cluster. */
  cpu(): Map<string, number> {
    const out = new Map<string, number>();
    for (const a of this.#agents.values())
      if (a.proc?.pid !== undefined && a.ended === undefined) out.set(a.cluster, cpuSeconds(a.proc.pid));
    return out;
  }

  /**
   * Rewrites the changed service's manifest file in place; resolves to the Unix ms the write began.
   * In place, not written aside and renamed over it: on Linux the agent's recursive watch saw the
   * first rename over a file at once but later ones over the same file only at its periodic rescan.
   */
  async edit(change: KindChange): Promise<number> {
    const agent = this.#get(change.cluster);
    agent.resources = applyKindChange(agent.resources, change);
    const files = manifestFiles(agent.resources);
    const file = [...files.keys()].find((f) => f.endsWith(`/${change.service}.yaml`));
    if (file === undefined)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `${change.cluster} has no manifest file for ${change.service}`,
      );
    const target = join(agent.root, 'manifests', file);
    const text = (files.get(file) as Resource[]).map((r) => stringify(r)).join('---\n');
    const at = Date.now();
    await writeFile(target, text);
    return at;
  }

  /** SIGTERM, then SIGKILL for an agent still running 10 s later. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.#agents.values()].map(async (a) => {
        if (!a.proc) return;
        const proc = a.proc;
        const late = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await stopChild(proc, 'SIGTERM');
        clearTimeout(late);
      }),
    );
  }

  /** Removes every agent's manifests, outputs and state. */
  async remove(root: string): Promise<void> {
    await rm(root, { recursive: true, force: true });
  }

  #get(cluster: string): RealAgent {
    const agent = this.#agents.get(cluster);
    if (!agent) throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `${cluster} runs no real agent`);
    return agent;
  }

  #onLine(cluster: string, line: string): void {
    if (/^\{"level":[4-6]\d/.test(line)) process.stderr.write(`meshrelay-agent ${cluster}: ${line}\n`);
    if (!line.includes('"msg":"output applied"') && !line.includes('"msg":"snapshot acked"')) return;
    const entry = JSON.parse(line) as {
      msg: string;
      time: number;
      generation?: number;
      hash?: string;
      resources?: number;
      provenance?: Provenance[];
    };
    if (entry.msg === 'snapshot acked') {
      this.#events.push({
        t: 'acked',
        cluster,
        generation: entry.generation ?? 0,
        accepted: true,
        code: '',
        at: entry.time,
      });
      return;
    }
    const at = entry.time;
    this.#events.push({
      t: 'applied',
      cluster,
      hash: entry.hash ?? '',
      provenance: provenanceDigest(entry.provenance ?? []),
      found: [],
      resources: entry.resources ?? 0,
      at,
    });
  }
}
