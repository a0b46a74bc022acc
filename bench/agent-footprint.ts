/**
 * `node bench/agent-footprint.ts [--tier S|M|L] [--idle-seconds N] [--keep]`: the footprint of one
 * relay agent process (file provider) holding one cluster of the bench workload.
 *
 * Writes the cluster's manifests (one YAML file per service with its EndpointSlice and Pods, one
 * for the Nodes and the gateway, one for the Gloo resources) into a temp dir, starts the real
 * `meshrelay-agent` binary against it with no management server (it keeps retrying to connect,
 * as an agent whose server is away does), waits for its first input snapshot, lets it settle,
 * and then reports:
 * - RSS after settling and the RSS high-water mark (VmRSS, VmHWM from /proc/<pid>/status);
 * - idle CPU: utime + stime from /proc/<pid>/stat over the idle window, as a share of one core;
 * - start: time from spawn to the first input snapshot; edit: time from rewriting one service's
 *   file to the next snapshot (watch event, one file re-read, snapshot re-assembled).
 * Before that it runs `meshrelay-agent --help` once, as an image build or an install would: the
 * binary's compile cache then holds the agent's stripped and compiled modules, so the measured
 * start loads no TypeScript transpiler (a first start after the sources changed carries ~13 MB
 * more RSS; the report says the cache was warmed).
 * Linux only (reads /proc).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { MeshrelayError, type Resource } from '@meshrelay/api';
import { spawnProcess, type ProcessHandle } from '@meshrelay/testkit';
import { cpuSeconds, procStatus } from './proc-stats.ts';
import { TIERS, generateWorkload, type WorkloadShape } from './workload.ts';

export const AGENT_BIN = fileURLToPath(new URL('../packages/agent/bin/meshrelay-agent.js', import.meta.url));

/** Groups a cluster's resources into manifest files the way an operator's repository would. */
export function manifestFiles(resources: readonly Resource[]): Map<string, Resource[]> {
  const files = new Map<string, Resource[]>();
  const add = (file: string, r: Resource): void => {
    const list = files.get(file) ?? [];
    list.push(r);
    files.set(file, list);
  };
  for (const r of resources) {
    const ns = r.metadata.namespace ?? '';
    const app = r.metadata.labels?.['app'] ?? r.metadata.labels?.['kubernetes.io/service-name'];
    if (r.apiVersion.includes('gloo.solo.io')) add('gloo/policies.yaml', r);
    else if (app !== undefined && ns !== '') add(`services/${ns}/${app}.yaml`, r);
    else add('cluster/infrastructure.yaml', r);
  }
  return files;
}

/** Writes the manifest files of `resources` under `dir`; resolves to how many files. */
export async function writeManifests(dir: string, resources: readonly Resource[]): Promise<number> {
  const files = manifestFiles(resources);
  for (const [file, list] of files) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), list.map((r) => stringify(r)).join('---\n'));
  }
  return files.size;
}

/** Rewrites the first service's file with another port and waits for the agent's next snapshot. */
async function timeOneEdit(agent: ProcessHandle, manifests: string): Promise<number> {
  const file = path.join(manifests, 'services', 'shop', 'svc-000.yaml');
  const text = await readFile(file, 'utf8');
  const after = agent.lineCount;
  const editedAt = performance.now();
  await writeFile(file, text.replaceAll('port: 8080', 'port: 8081'));
  await agent.waitForLine(/"generation":2,.*input snapshot built/, 60_000, { after });
  return performance.now() - editedAt;
}

export interface AgentFootprint {
  readonly resources: number;
  readonly files: number;
  readonly hashMatches: boolean;
  readonly rssMiB: number;
  readonly rssSettledMiB: number;
  readonly rssHighWaterMiB: number;
  readonly idleSeconds: number;
  readonly idleCpuPercentOfCore: number;
  readonly startMs: number;
  readonly editMs: number;
}

/** `meshrelay-agent --help`: loads (and so compiles into the binary's compile cache) every module a start loads. */
export async function warmCompileCache(): Promise<void> {
  const help = await spawnProcess({
    command: process.execPath,
    args: [AGENT_BIN, '--help'],
    name: 'meshrelay-agent --help',
  });
  const { code, signal } = await help.exited;
  if (code !== 0)
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `meshrelay-agent --help exited with ${String(code ?? signal)}`);
}

/** Runs one agent on the first cluster of `shape` (see the file comment); `settleMs` before the idle window. */
export async function measureAgentFootprint(
  shape: WorkloadShape,
  idleSeconds: number,
  options: { settleMs?: number; keep?: boolean } = {},
): Promise<AgentFootprint> {
  const workload = generateWorkload({ ...shape, clusters: 1 });
  const input = [...workload.inputs.values()][0];
  if (!input) throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', 'the workload has no cluster');
  const root = await mkdtemp(path.join(tmpdir(), 'agent-footprint-'));
  try {
    const manifests = path.join(root, 'manifests');
    const fileCount = await writeManifests(manifests, input.resources);
    console.error(
      `agent footprint: ${input.resources.length} resources in ${fileCount} files (${(input.bytes / 1e6).toFixed(1)} MB canonical)`,
    );
    await warmCompileCache();
    const spawnedAt = performance.now();
    const agent = await spawnProcess({
      command: process.execPath,
      args: [
        AGENT_BIN,
        '--cluster',
        input.cluster,
        '--manifests-dir',
        manifests,
        '--output-dir',
        path.join(root, 'out'),
        '--state-dir',
        path.join(root, 'state'),
        '--server-address',
        'localhost:1',
        '--token',
        'unused',
        '--health-port',
        '0',
        '--access-log-port',
        '0',
        '--log-level',
        'info',
      ],
      name: 'meshrelay-agent',
    });
    try {
      const built = JSON.parse(await agent.waitForLine(/input snapshot built/, 300_000)) as {
        resources: number;
        hash: string;
      };
      const startMs = performance.now() - spawnedAt;
      if (built.resources !== input.resources.length) {
        throw new MeshrelayError(
          'MESHRELAY_ERR_INVALID_CONFIG',
          `the agent built ${built.resources} resources, the workload has ${input.resources.length}`,
        );
      }
      // Settle: the first snapshot's garbage is collected and the relay client is in its backoff.
      await delay(options.settleMs ?? 10_000);
      const settled = procStatus(agent.pid);
      const cpuBefore = cpuSeconds(agent.pid);
      await delay(idleSeconds * 1000);
      const cpu = cpuSeconds(agent.pid) - cpuBefore;
      const after = procStatus(agent.pid);
      const editMs = await timeOneEdit(agent, manifests);
      return {
        resources: input.resources.length,
        files: fileCount,
        hashMatches: built.hash === input.hash,
        rssMiB: +(after.rssKiB / 1024).toFixed(1),
        rssSettledMiB: +(settled.rssKiB / 1024).toFixed(1),
        rssHighWaterMiB: +(after.hwmKiB / 1024).toFixed(1),
        idleSeconds,
        idleCpuPercentOfCore: +((100 * cpu) / idleSeconds).toFixed(2),
        startMs: Math.round(startMs),
        editMs: Math.round(editMs),
      };
    } finally {
      await agent.stop();
    }
  } finally {
    if (options.keep !== true) await rm(root, { recursive: true, force: true });
    else console.error(`kept ${root}`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tier: { type: 'string', default: 'M' },
      'idle-seconds': { type: 'string', default: '30' },
      keep: { type: 'boolean', default: false },
    },
  });
  const tier = values.tier.toUpperCase();
  const shape = TIERS[tier];
  if (!shape)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `--tier: "${values.tier}" is not one of ${Object.keys(TIERS).join(', ')}`,
    );
  const figures = await measureAgentFootprint(shape, Number(values['idle-seconds']), { keep: values.keep });
  console.log(JSON.stringify({ tier, ...figures }));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
