/**
 * `meshctl cluster register NAME --kubeconfig F`: registration straight through the Kubernetes API
 * of the management cluster (the `kubernetes` registry backend), for when the management server's
 * HTTP API is not reachable from the operator's machine. It writes the same objects the server
 * would (KubernetesCluster CR + token Secret, shared code from @meshrelay/registry); the
 * servers' informers pick the CR up. It prints the token once and what installs the agent with
 * Helm in the workload cluster.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { DNS_LABEL, parseDuration } from '@meshrelay/api';
import { loadKubeConfig } from '@meshrelay/kube';
import {
  RELAY_ROOT_CA_SECRET,
  createClusterWithToken,
  kubeErrorCode,
  kubeFailure,
  registryApis,
  tokenSecretName,
} from '@meshrelay/registry';
import type { Command } from 'commander';
import { usageError, type CliContext } from '../cli-context.ts';
import { shellQuote } from '../format.ts';
import {
  checkCredentialFiles,
  writeCredentialFiles,
  type CredentialFiles,
  type WrittenFiles,
} from './agent-credentials.ts';

/** Defaults of deploy/helm/meshrelay/values.yaml (glooAgent.relay.tokenSecret / rootCaSecret). */
export const AGENT_TOKEN_SECRET = { name: 'relay-identity-token-secret', key: 'token' } as const;
export const AGENT_ROOT_CA_SECRET = { name: 'relay-root-tls-secret', key: 'ca.crt' } as const;
export const HELM_CHART_PATH = 'deploy/helm/meshrelay';
export const DEFAULT_TOKEN_TTL_SECONDS = 604_800;
/** --token-ttl's help text. */
export const TOKEN_TTL_HELP = 'a duration (12h, 7d) or bare seconds, at least 1m';

/**
 * --token-ttl in seconds: a duration (12h, 7d) or bare seconds, whole seconds, at least a minute; a usage error
 * otherwise.
 */
export function parseTokenTtl(raw: string | undefined): number {
  const ttl = parseDuration(raw ?? '', 60_000, 's');
  if ('error' in ttl) throw usageError(`--token-ttl: ${ttl.error}`);
  if (ttl.value % 1000 !== 0) throw usageError(`--token-ttl: ${raw ?? ''} is not a whole number of seconds`);
  return ttl.value / 1000;
}

export interface KubernetesRegisterFlags extends CredentialFiles {
  readonly kubeconfig: string;
  readonly kubeContext?: string;
  readonly namespace: string;
  readonly relayAddress?: string;
  readonly tokenTtl: string;
  readonly clusterDomain?: string;
  readonly trustDomain?: string;
  readonly skipWarming?: boolean;
}

/** What the agent's installation needs, as printed (and as `-o json` answers). */
export interface KubernetesRegistration {
  readonly cluster: { readonly name: string; readonly namespace: string; readonly uid: string };
  readonly tokenSecret: string;
  readonly token: string;
  readonly tokenExpiresAt: string;
  /** undefined until a management server created the relay root CA Secret. */
  readonly caBundlePem: string | undefined;
  readonly install: readonly string[];
}

/** Throws a usage error when a Kubernetes-only flag is given without --kubeconfig, or a value is bad. */
export function checkKubernetesFlags(
  flags: Partial<KubernetesRegisterFlags>,
  sources: (flag: string) => string | undefined,
): void {
  if (flags.kubeconfig === undefined) {
    const stray = ['kubeContext', 'namespace', 'relayAddress', 'tokenTtl'].filter((key) => sources(key) === 'cli');
    const named = stray.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
    if (named.length > 0) throw usageError(`${named.join(', ')} ${named.length === 1 ? 'needs' : 'need'} --kubeconfig`);
    return;
  }
  if (!DNS_LABEL.test(flags.namespace ?? ''))
    throw usageError(`--namespace: "${flags.namespace}" is not a DNS-1123 label`);
  parseTokenTtl(flags.tokenTtl);
  if (flags.relayAddress !== undefined && !/^[^\s:]+:\d{1,5}$/.test(flags.relayAddress)) {
    throw usageError(`--relay-address: "${flags.relayAddress}" is not host:port`);
  }
}

/** Registers through the Kubernetes API and prints the hand-over; see the file comment. */
export async function registerThroughKubernetes(
  ctx: CliContext,
  cmd: Command,
  name: string,
  flags: KubernetesRegisterFlags,
): Promise<void> {
  await checkCredentialFiles(flags);
  const kubeConfig = loadKubeConfig({
    kubeconfig: flags.kubeconfig,
    ...(flags.kubeContext !== undefined ? { context: flags.kubeContext } : {}),
  });
  const apis = registryApis(kubeConfig);
  const created = await createClusterWithToken(apis, name, {
    namespace: flags.namespace,
    tokenTtlSeconds: parseTokenTtl(flags.tokenTtl),
    now: ctx.now(),
    ...(flags.clusterDomain !== undefined ? { clusterDomain: flags.clusterDomain } : {}),
    ...(flags.trustDomain !== undefined ? { trustDomain: flags.trustDomain } : {}),
    ...(flags.skipWarming === true ? { skipWarming: true } : {}),
  });
  const caBundlePem = await readRootCa(apis.core, flags.namespace);
  const relayAddress = flags.relayAddress ?? '<relay-address>';
  const { written, failure } =
    caBundlePem === undefined
      ? await writeCredentialFiles(
          { ...(flags.tokenOut !== undefined ? { tokenOut: flags.tokenOut } : {}) },
          created.issued.token,
          { address: relayAddress, caBundlePem: '' },
        )
      : await writeCredentialFiles(flags, created.issued.token, { address: relayAddress, caBundlePem });
  const registration: KubernetesRegistration = {
    cluster: { name, namespace: flags.namespace, uid: created.object.metadata?.uid ?? '' },
    tokenSecret: tokenSecretName(name),
    token: created.issued.token,
    tokenExpiresAt: created.issued.expiresAt.toISOString(),
    caBundlePem,
    install: agentInstallCommands({
      cluster: name,
      namespace: flags.namespace,
      relayAddress,
      token: created.issued.token,
      written,
    }),
  };
  if (ctx.globals(cmd).output === 'json') ctx.printJson(registration);
  else ctx.print(renderKubernetesRegistration(registration, written));
  if (failure) throw failure;
}

async function readRootCa(core: CoreV1Api, namespace: string): Promise<string | undefined> {
  try {
    const secret = await core.readNamespacedSecret({ name: RELAY_ROOT_CA_SECRET, namespace });
    const crt = secret.data?.['tls.crt'];
    return crt === undefined ? undefined : Buffer.from(crt, 'base64').toString('utf8');
  } catch (err) {
    if (kubeErrorCode(err) === 404) return undefined;
    throw kubeFailure(err, `read Secret ${namespace}/${RELAY_ROOT_CA_SECRET}`);
  }
}

interface InstallInputs {
  readonly cluster: string;
  readonly namespace: string;
  readonly relayAddress: string;
  readonly token: string;
  readonly written: WrittenFiles;
}

/**
 * The commands that install the agent in the workload cluster with the Helm chart: the token and
 * root CA Secrets the chart mounts (glooAgent.relay.tokenSecret / rootCaSecret), then `helm install`.
 */
export function agentInstallCommands(i: InstallInputs): string[] {
  const ns = shellQuote(i.namespace);
  const tokenSource =
    i.written.tokenFile !== undefined
      ? `--from-file=${AGENT_TOKEN_SECRET.key}=${shellQuote(i.written.tokenFile)}`
      : `--from-literal=${AGENT_TOKEN_SECRET.key}=${shellQuote(i.token)}`;
  const caFile = i.written.caFile !== undefined ? shellQuote(i.written.caFile) : '<root-ca-file>';
  // Placeholders (<relay-address>) stay bare so they read as something to replace.
  const set = (key: string, value: string): string =>
    `--set ${key}=${/^<[a-z-]+>$/.test(value) ? value : shellQuote(value)}`;
  return [
    `kubectl create namespace ${ns}`,
    `kubectl --namespace ${ns} create secret generic ${AGENT_TOKEN_SECRET.name} ${tokenSource}`,
    `kubectl --namespace ${ns} create secret generic ${AGENT_ROOT_CA_SECRET.name} --from-file=${AGENT_ROOT_CA_SECRET.key}=${caFile}`,
    [
      `helm install meshrelay-agent ${HELM_CHART_PATH} --namespace ${ns}`,
      set('glooMgmtServer.enabled', 'false'),
      set('redis.deploy', 'false'),
      set('glooAgent.enabled', 'true'),
      set('glooAgent.cluster', i.cluster),
      set('glooAgent.relay.serverAddress', i.relayAddress),
      set('glooAgent.relay.tokenSecret.name', AGENT_TOKEN_SECRET.name),
      set('glooAgent.relay.tokenSecret.key', AGENT_TOKEN_SECRET.key),
      set('glooAgent.relay.rootCaSecret.name', AGENT_ROOT_CA_SECRET.name),
      set('glooAgent.relay.rootCaSecret.key', AGENT_ROOT_CA_SECRET.key),
    ].join(' '),
  ];
}

function renderKubernetesRegistration(r: KubernetesRegistration, written: WrittenFiles): string {
  const { name, namespace } = r.cluster;
  const lines = [
    `Cluster "${name}" registered through the Kubernetes API: KubernetesCluster ${namespace}/${name}, token hash in Secret ${namespace}/${r.tokenSecret}.`,
    '',
    `Relay identity token:  ${r.token}`,
    `Token expires at:      ${r.tokenExpiresAt}`,
    'The token is shown only now: only its hash is stored.',
  ];
  if (written.tokenFile !== undefined) lines.push(`Token written to:      ${written.tokenFile} (mode 0600)`);
  if (written.caFile !== undefined) lines.push(`Root CA written to:    ${written.caFile}`);
  lines.push('');
  if (r.caBundlePem !== undefined)
    lines.push(`Relay root CA bundle (Secret ${namespace}/${RELAY_ROOT_CA_SECRET}):`, r.caBundlePem.trimEnd(), '');
  else
    lines.push(
      `Relay root CA: Secret ${namespace}/${RELAY_ROOT_CA_SECRET} does not exist yet (no management server has started in this namespace); take its tls.crt once one has.`,
      '',
    );
  const todo = [
    ...(written.caFile === undefined ? ['save the root CA bundle to <root-ca-file>'] : []),
    ...(r.install.some((c) => c.includes('<relay-address>'))
      ? ['replace <relay-address> with the relay address agents dial (or pass --relay-address)']
      : []),
  ];
  if (todo.length > 0) lines.push(`Then ${todo.join(' and ')}.`);
  lines.push(
    `Install the agent in cluster "${name}" (kubectl and helm pointed at that cluster, from the Meshrelay source tree):`,
  );
  for (const command of r.install) lines.push(`  ${command}`);
  return lines.join('\n') + '\n';
}
