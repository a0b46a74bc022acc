/**
 * Test support for the translator: reading manifests and golden cases, rendering outputs.
 *
 * Golden case input format (test/testdata/<case>/input.yaml): multi-document YAML. A comment
 * line `# cluster: NAME` at the start of a document puts that document and the ones after it
 * into NAME's input snapshot, until the next such line. `# vip: <namespace>/<name> <address>` lines give VIP
 * allocations and
 * `# cluster-info: NAME key=value ...` lines (trustDomain, network, clusterDomain) give
 * ClusterInfo fields (`labels=k:v;k2:v2` gives its labels). Documents under `# cluster: management`
 * are the management plane's Workspaces.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { InputSnapshot, Resource } from '@meshrelay/api';
import { buildTestInputSnapshot } from '@meshrelay/testkit';
import type { ClusterInfo, TranslationInput, TranslationResult } from '../src/index.ts';

export const TESTDATA = new URL('./testdata/', import.meta.url).pathname;
export const EXAMPLES = new URL('../../../examples/', import.meta.url).pathname;

/** All documents of every *.yaml file in `dir`, in file-name order. */
export function readManifestDir(dir: string): Resource[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .flatMap((f) => parseDocuments(readFileSync(join(dir, f), 'utf8')));
}

function parseDocuments(text: string): Resource[] {
  return text
    .split(/^---[ \t]*$/m)
    .map((doc) => parse(doc) as unknown)
    .filter((doc): doc is Resource => doc !== null && doc !== undefined);
}

export interface GoldenCase {
  readonly perCluster: Map<string, Resource[]>;
  readonly input: TranslationInput;
}

/** Parses a golden input file into a TranslationInput. */
export function parseCase(text: string): GoldenCase {
  const perCluster = new Map<string, Resource[]>();
  const vips = new Map<string, string>();
  const infos = new Map<string, Record<string, string>>();
  let cluster: string | undefined;
  for (const chunk of text.split(/^---[ \t]*$/m)) {
    let content = false;
    for (const line of chunk.split('\n')) {
      const c = /^# cluster: (\S+)\s*$/.exec(line);
      if (c && content) throw new Error(`"${line}" must start a document (put it right after ---)`);
      if (c) cluster = c[1] as string;
      if (line.trim() !== '' && !line.startsWith('#')) content = true;
      const v = /^# vip: (\S+) (\S+)\s*$/.exec(line);
      if (v) vips.set(v[1] as string, v[2] as string);
      const i = /^# cluster-info: (\S+) (.*)$/.exec(line);
      if (i)
        infos.set(
          i[1] as string,
          Object.fromEntries(
            (i[2] as string)
              .trim()
              .split(/\s+/)
              .map((kv) => kv.split('=') as [string, string]),
          ),
        );
    }
    const doc = parse(chunk) as unknown;
    if (doc === null || doc === undefined) continue;
    if (cluster === undefined) throw new Error('a document appears before any "# cluster: NAME" line');
    const list = perCluster.get(cluster) ?? [];
    list.push(doc as Resource);
    perCluster.set(cluster, list);
  }
  const clusters: ClusterInfo[] = [...infos].map(([name, { labels, ...fields }]) => ({
    name,
    ...fields,
    ...(labels ? { labels: Object.fromEntries(labels.split(';').map((kv) => kv.split(':') as [string, string])) } : {}),
  }));
  const workspaces = perCluster.get('management');
  perCluster.delete('management');
  return {
    perCluster,
    input: { inputs: snapshotsOf(perCluster), clusters, vips, ...(workspaces ? { workspaces } : {}) },
  };
}

export function snapshotsOf(perCluster: ReadonlyMap<string, readonly Resource[]>): Map<string, InputSnapshot> {
  return new Map([...perCluster].map(([name, resources]) => [name, buildTestInputSnapshot(name, resources)]));
}

/** Renders a result as golden text: problems as leading comments, then each cluster's resources. */
export function renderResult(result: TranslationResult): string {
  const lines: string[] = [];
  for (const p of result.problems)
    lines.push(`# problem: [${p.cluster ?? '-'}] ${p.resource ?? '-'}: ${p.approval ?? 'WARNING'}: ${p.reason}`);
  for (const s of result.statuses) {
    lines.push(
      `# status: ${s.source}${s.state.observedGeneration > 0 ? ` generation ${s.state.observedGeneration}` : ''} ${s.state.approval}${s.state.message === '' ? '' : ` (${s.state.message})`}`,
    );
    for (const o of s.outputs) lines.push(`#   output: ${o.cluster} ${o.kind} ${o.namespace}/${o.name}`);
  }
  const docs: string[] = [];
  for (const cluster of [...result.outputs.keys()].sort()) {
    const output = result.outputs.get(cluster);
    for (const r of output?.resources ?? [])
      docs.push(`# cluster: ${cluster}\n${stringify(r, { sortMapEntries: true })}`);
  }
  return `${lines.join('\n')}${lines.length > 0 ? '\n' : ''}${docs.join('---\n')}`;
}
