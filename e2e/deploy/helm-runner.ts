// Runs the real helm binary (installed into .tools/ by scripts/install-helm.sh) over the chart.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CHART = join(ROOT, 'deploy/helm/meshrelay');
const HELM = join(ROOT, '.tools/helm/helm');

/** A rendered Kubernetes object, as parsed from helm's output. */
export type KubeObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
};

export interface HelmRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Installs helm when .tools/helm/helm is missing (a clean checkout); returns its path. */
export function ensureHelm(): string {
  if (!existsSync(HELM))
    execFileSync('bash', [join(ROOT, 'scripts/install-helm.sh')], { stdio: ['ignore', 'inherit', 'inherit'] });
  return HELM;
}

/** Runs helm with its cache/config/data homes in a throwaway directory; never throws on a non-zero exit. */
export async function runHelm(args: readonly string[]): Promise<HelmRun> {
  const helm = ensureHelm();
  const home = mkdtempSync(join(tmpdir(), 'meshrelay-helm-'));
  const env = {
    ...process.env,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  try {
    return await new Promise<HelmRun>((resolveRun) => {
      execFile(helm, [...args], { env, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolveRun({ code, stdout, stderr });
      });
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export interface TemplateOptions {
  readonly namespace?: string;
  readonly release?: string;
  readonly includeCrds?: boolean;
}

/** `helm template` with the given values (written to a file, as an operator would pass them). */
export async function templateRun(values: object, options: TemplateOptions = {}): Promise<HelmRun> {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-values-'));
  try {
    const file = join(dir, 'values.json');
    writeFileSync(file, JSON.stringify(values));
    const args = [
      'template',
      options.release ?? 'meshrelay',
      CHART,
      '--namespace',
      options.namespace ?? 'gloo-mesh',
      '--values',
      file,
    ];
    if (options.includeCrds) args.push('--include-crds');
    return await runHelm(args);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The NOTES `helm install` prints with these `--set` values (a client-side dry run); throws with helm's message when it
 * fails.
 */
export async function installNotes(values: readonly string[], namespace = 'gloo-mesh'): Promise<string> {
  const run = await runHelm([
    'install',
    'meshrelay',
    CHART,
    '--dry-run=client',
    '--namespace',
    namespace,
    ...values.flatMap((v) => ['--set', v]),
  ]);
  if (run.code !== 0) throw new Error(`helm install --dry-run failed (exit ${run.code}): ${run.stderr}`);
  return run.stdout.slice(run.stdout.indexOf('NOTES:'));
}

/** Renders the chart and parses every document; throws with helm's message when it refuses the values. */
export async function renderChart(values: object, options: TemplateOptions = {}): Promise<KubeObject[]> {
  const run = await templateRun(values, options);
  if (run.code !== 0) throw new Error(`helm template failed (exit ${run.code}): ${run.stderr}`);
  return parseManifests(run.stdout);
}

/** Parses a multi-document YAML stream; empty documents are skipped, a YAML error throws. */
export function parseManifests(text: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    objects.push(value as KubeObject);
  }
  return objects;
}

/** The one object of this kind and name; throws naming what is there instead. */
export function findObject(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found)
    throw new Error(`no ${kind} "${name}" among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}

export function objectsOfKind(objects: readonly KubeObject[], kind: string): KubeObject[] {
  return objects.filter((o) => o.kind === kind);
}
