// Runs `meshctl cluster register NAME --kubeconfig F` for real against the Kubernetes API test
// double of @meshrelay/testkit, so the chart's notes and the operator docs can be checked against what
// meshctl actually prints, and meshctl's printed commands against what the chart accepts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { runMeshctl } from '@meshrelay/meshctl';
import { startFakeKubeApiServer } from '@meshrelay/testkit';
import { CHART, ROOT } from './helm-runner.ts';

export interface KubernetesRegistration {
  /** The directory the token and CA files were written to (meshctl prints their absolute paths). */
  readonly dir: string;
  /** The install commands meshctl printed, one per line. */
  readonly install: readonly string[];
}

const CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';
/** Options whose value is a local file: rewritten into the test's own directory. */
const FILE_OPTIONS = new Set(['--token-out', '--ca-out']);

/**
 * Runs `meshctl -o json ARGV` (ARGV as an operator types it after `meshctl`, starting with
 * `cluster register NAME --kubeconfig F`) against a fresh Kubernetes API test double holding a
 * relay root CA Secret, as a management server creates it. The kubeconfig becomes the double's, and
 * --token-out/--ca-out files land in a temp directory under their own base names. Throws with
 * meshctl's stderr when it exits non-zero. Everything is removed in `t.after`.
 */
export async function registerWithKubeconfig(t: TestContext, argv: readonly string[]): Promise<KubernetesRegistration> {
  if (argv[0] !== 'cluster' || argv[1] !== 'register' || !argv.includes('--kubeconfig'))
    throw new Error(`not a cluster register --kubeconfig command: ${argv.join(' ')}`);
  const fake = await startFakeKubeApiServer();
  t.after(() => fake.stop());
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-register-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  fake.put({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'relay-root-ca', namespace: 'gloo-mesh' },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': Buffer.from(CA_PEM).toString('base64'), 'tls.key': Buffer.from('unused').toString('base64') },
  });
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, fake.kubeConfigYaml(), { mode: 0o600 });
  const local = argv.map((word, i) => {
    const option = argv[i - 1] ?? '';
    if (option === '--kubeconfig') return kubeconfig;
    return FILE_OPTIONS.has(option) ? join(dir, basename(word)) : word;
  });
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: {},
  };
  const code = await runMeshctl(['-o', 'json', ...local], io);
  if (code !== 0) throw new Error(`meshctl ${argv.join(' ')} exited ${code}: ${stderr}`);
  const answer = JSON.parse(stdout) as { install: string[] };
  return { dir, install: answer.install };
}

/** Shell text with `\`-continued lines joined and runs of blanks collapsed, one command per line. */
export function joinedCommands(text: string): string[] {
  return text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim().replace(/\s+/g, ' '))
    .filter((l) => l !== '');
}

/**
 * `helm install RELEASE CHART ARGS…` (as printed for an operator, run from the source tree) turned
 * into the arguments of `helm template` with the chart's absolute path. Throws when the line is not
 * such a command, names another chart, or holds quoting this split cannot follow.
 */
export function helmTemplateArgs(line: string): string[] {
  const words = line.split(' ');
  if (words[0] !== 'helm' || words[1] !== 'install' || words.length < 4)
    throw new Error(`not a helm install line: ${line}`);
  if (/['"\\$`]/.test(line)) throw new Error(`quoting in a helm line is not followed here: ${line}`);
  const chart = resolve(ROOT, words[3] ?? '');
  if (chart !== CHART) throw new Error(`the line installs ${words[3]}, not the chart at ${CHART}`);
  return ['template', words[2] ?? '', chart, ...words.slice(4)];
}

/** `kubectl … create secret generic NAME --from-file=KEY=PATH` → its name, key and path. */
export function secretOf(line: string): { name: string; key: string; path: string } {
  const match = /create secret generic (\S+) --from-file=([^=\s]+)=(\S+)$/.exec(line);
  if (!match) throw new Error(`not a kubectl secret line: ${line}`);
  return { name: match[1] ?? '', key: match[2] ?? '', path: match[3] ?? '' };
}
