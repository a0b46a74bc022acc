import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { MeshrelayError } from '@meshrelay/api';
import type { ClusterView, HealthResponse, ReadyResponse, ServerStatus } from '../api-types.ts';
import type { CliContext } from '../cli-context.ts';
import { formatJson } from '../format.ts';
import { ApiError, type ApiClient } from '../http-client.ts';
import { summarizeInput, summarizeOutput, type InputSummary, type OutputSummary } from './snapshot.ts';

/** A part of the report that could not be gathered. */
export interface ReportError {
  readonly error: { readonly code: string; readonly message: string };
}

export interface ClusterReport {
  readonly cluster: ClusterView;
  /** null: the server holds no such snapshot. */
  readonly input: InputSummary | null | ReportError;
  readonly output: OutputSummary | null | ReportError;
}

/** One JSON document describing a management server, for bug reports. Holds no secrets. */
export interface DebugReport {
  readonly generatedAt: string;
  readonly meshctlVersion: string;
  readonly server: string;
  readonly health: HealthResponse | ReportError;
  readonly ready: ReadyResponse | ReportError;
  readonly status: ServerStatus;
  readonly clusters: readonly ClusterReport[];
}

/** Adds `debug report [--file F]`. */
export function addDebugCommands(program: Command, ctx: CliContext, version: string): void {
  const debug = program.command('debug').description('collect diagnostics from the management server');

  debug
    .command('report')
    .description('gather status, clusters and snapshot summaries into one JSON document')
    .option('--file <file>', 'write the report to this file instead of stdout')
    .action(async (flags: { file?: string }, cmd: Command) => {
      const client = ctx.client(cmd);
      const report = await gatherDebugReport(client, version, ctx.now());
      if (flags.file === undefined) {
        ctx.io.stdout.write(formatJson(report));
        return;
      }
      const path = resolve(flags.file);
      try {
        await writeFile(path, formatJson(report));
      } catch (err) {
        throw new MeshrelayError(
          'MESHRELAY_ERR_INTERNAL',
          `cannot write the debug report to "${path}": ${(err as Error).message}`,
          { cause: err },
        );
      }
      if (ctx.globals(cmd).output === 'json') return ctx.printJson({ file: path });
      ctx.print(`Debug report written to ${path}`);
    });
}

/**
 * Reads status and clusters (either failing fails the report), then each
 * cluster's snapshot summaries; a part that fails is recorded in place, so a
 * half-broken server still yields a report.
 */
export async function gatherDebugReport(client: ApiClient, version: string, now: Date): Promise<DebugReport> {
  const [status, clusters] = await Promise.all([client.status(), client.listClusters()]);
  const [health, ready] = await Promise.all([attempt(() => client.health()), attempt(() => client.ready())]);
  const perCluster: ClusterReport[] = [];
  for (const cluster of clusters) {
    const [input, output] = await Promise.all([
      snapshotPart(async () => summarizeInput(await client.getInputSnapshot(cluster.name))),
      snapshotPart(async () => summarizeOutput(await client.getOutputSnapshot(cluster.name))),
    ]);
    perCluster.push({ cluster, input, output });
  }
  return {
    generatedAt: now.toISOString(),
    meshctlVersion: version,
    server: client.server,
    health,
    ready,
    status,
    clusters: perCluster,
  };
}

async function attempt<T>(read: () => Promise<T>): Promise<T | ReportError> {
  try {
    return await read();
  } catch (err) {
    return asReportError(err);
  }
}

async function snapshotPart<T>(read: () => Promise<T>): Promise<T | null | ReportError> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof ApiError && err.serverCode === 'MESHRELAY_ERR_SNAPSHOT_NOT_FOUND') return null;
    return asReportError(err);
  }
}

function asReportError(err: unknown): ReportError {
  if (err instanceof ApiError) return { error: { code: err.serverCode, message: err.message } };
  return { error: { code: 'MESHRELAY_ERR_INTERNAL', message: err instanceof Error ? err.message : String(err) } };
}
