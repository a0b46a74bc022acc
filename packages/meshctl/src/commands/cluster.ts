import { InvalidArgumentError, Option, type Command } from 'commander';
import { isDnsName } from '@meshrelay/api';
import type { ClusterUpdateRequest, ClusterView, RelayEndpoint } from '../api-types.ts';
import { clusterArgument, usageError, type CliContext } from '../cli-context.ts';
import { formatAge, renderTable, shortHash } from '../format.ts';
import {
  checkCredentialFiles,
  renderCredentials,
  writeCredentialFiles,
  type CredentialFiles,
} from './agent-credentials.ts';
import {
  DEFAULT_TOKEN_TTL_SECONDS,
  TOKEN_TTL_HELP,
  checkKubernetesFlags,
  registerThroughKubernetes,
  type KubernetesRegisterFlags,
} from './cluster-kubernetes.ts';
import { addForgetContributionCommand } from './cluster-contribution.ts';
import { addRevokeCommand } from './cluster-revoke.ts';

interface RegisterFlags extends CredentialFiles, Partial<Omit<KubernetesRegisterFlags, keyof CredentialFiles>> {
  readonly clusterDomain?: string;
  readonly trustDomain?: string;
  readonly skipWarming?: boolean;
}

interface UpdateFlags {
  readonly clusterDomain?: string;
  readonly trustDomain?: string;
  readonly skipWarming?: boolean;
}

/** Adds `cluster register|list|deregister|update|rotate-token|revoke`. */
export function addClusterCommands(program: Command, ctx: CliContext): void {
  const cluster = program.command('cluster').description('register, list, update and deregister workload clusters');

  cluster
    .command('register')
    .description('register a workload cluster and print what its relay agent needs (the token is shown only here)')
    .addArgument(clusterArgument())
    .option('--cluster-domain <domain>', "DNS domain of the cluster's services", parseDnsName)
    .option(
      '--trust-domain <domain>',
      "SPIFFE trust domain of the cluster's workloads (default: discovered from its Istio mesh config)",
      parseDnsName,
    )
    .option('--skip-warming', 'translate without waiting for this cluster to be warm')
    .option('--ca-out <file>', 'also write the relay root CA bundle to this file')
    .option('--token-out <file>', 'also write the token to this file (mode 0600)')
    .option(
      '--kubeconfig <file>',
      'register through the Kubernetes API of the management cluster (kubernetes registry) instead of the HTTP API',
    )
    .option('--kube-context <context>', 'context of --kubeconfig (default: its current-context)')
    .option('--namespace <namespace>', 'management namespace, also used for the agent (with --kubeconfig)', 'gloo-mesh')
    .option(
      '--relay-address <host:port>',
      'relay address agents dial, for the printed install commands (with --kubeconfig)',
    )
    .option(
      '--token-ttl <duration>',
      `token lifetime: ${TOKEN_TTL_HELP} (with --kubeconfig; over the HTTP API the server decides)`,
      String(DEFAULT_TOKEN_TTL_SECONDS),
    )
    .action(async (name: string, flags: RegisterFlags, cmd: Command) => {
      checkKubernetesFlags(flags, (key) => cmd.getOptionValueSource(key));
      if (flags.kubeconfig !== undefined)
        return registerThroughKubernetes(ctx, cmd, name, flags as KubernetesRegisterFlags);
      const client = ctx.client(cmd);
      await checkCredentialFiles(flags);
      const answer = await client.registerCluster({
        name,
        ...(flags.clusterDomain !== undefined ? { clusterDomain: flags.clusterDomain } : {}),
        ...(flags.trustDomain !== undefined ? { trustDomain: flags.trustDomain } : {}),
        ...(flags.skipWarming === true ? { skipWarming: true } : {}),
      });
      await handOver(ctx, cmd, answer, flags, `Cluster "${name}" registered.`, name);
    });

  cluster
    .command('list')
    .description('list registered clusters with their warm, connection and snapshot state')
    .action(async (_flags: unknown, cmd: Command) => {
      const clusters = await ctx.client(cmd).listClusters();
      if (ctx.globals(cmd).output === 'json') return ctx.printJson({ clusters });
      if (clusters.length === 0) return ctx.print('No clusters are registered.');
      ctx.print(renderClusterTable(clusters, ctx.now()));
    });

  cluster
    .command('deregister')
    .description("deregister a cluster: its agents' certificates stop working and its snapshots are dropped")
    .addArgument(clusterArgument())
    .action(async (name: string, _flags: unknown, cmd: Command) => {
      await ctx.client(cmd).deregisterCluster(name);
      if (ctx.globals(cmd).output === 'json') return ctx.printJson({ name, deregistered: true });
      ctx.print(`Cluster "${name}" deregistered.`);
    });

  cluster
    .command('update')
    .description("change a registered cluster's settings")
    .addArgument(clusterArgument())
    .addOption(
      new Option('--skip-warming [bool]', 'translate without waiting for this cluster to be warm (true|false)')
        .argParser(parseBool)
        .preset('true'),
    )
    .addOption(new Option('--no-skip-warming', 'wait for this cluster to be warm again'))
    .option('--cluster-domain <domain>', "DNS domain of the cluster's services", parseDnsName)
    .option(
      '--trust-domain <domain>',
      "SPIFFE trust domain of the cluster's workloads (default: discovered from its Istio mesh config)",
      parseDnsName,
    )
    .action(async (name: string, flags: UpdateFlags, cmd: Command) => {
      const update: ClusterUpdateRequest = {
        ...(flags.skipWarming !== undefined ? { skipWarming: flags.skipWarming } : {}),
        ...(flags.clusterDomain !== undefined ? { clusterDomain: flags.clusterDomain } : {}),
        ...(flags.trustDomain !== undefined ? { trustDomain: flags.trustDomain } : {}),
      };
      if (Object.keys(update).length === 0)
        throw usageError(
          'nothing to update: give --skip-warming[=true|false], --no-skip-warming, --cluster-domain or --trust-domain',
        );
      const view = await ctx.client(cmd).updateCluster(name, update);
      if (ctx.globals(cmd).output === 'json') return ctx.printJson(view);
      ctx.print(
        `Cluster "${name}" updated: skip-warming ${view.skipWarming}, cluster domain ${view.clusterDomain ?? '(default)'}, trust domain ${view.trustDomain ?? '(discovered)'}.`,
      );
    });

  cluster
    .command('rotate-token')
    .description('issue a new relay identity token; the previous one keeps working for the overlap window')
    .addArgument(clusterArgument())
    .option('--ca-out <file>', 'also write the relay root CA bundle to this file')
    .option('--token-out <file>', 'also write the new token to this file (mode 0600)')
    .action(async (name: string, flags: CredentialFiles, cmd: Command) => {
      const client = ctx.client(cmd);
      await checkCredentialFiles(flags);
      const answer = await client.rotateToken(name);
      await handOver(
        ctx,
        cmd,
        answer,
        flags,
        `New relay identity token for cluster "${name}" (the previous one keeps working until its overlap window ends).`,
        name,
      );
    });

  addRevokeCommand(cluster, ctx, handOver);
  addForgetContributionCommand(cluster, ctx);
}

/**
 * Writes the requested files, then prints the answer (raw JSON, or the text an
 * operator needs). The token is printed even when a file could not be written,
 * since the server will not show it again; the write failure is thrown after.
 */
async function handOver(
  ctx: CliContext,
  cmd: Command,
  answer: { token: string; tokenExpiresAt: string; relay: RelayEndpoint },
  files: CredentialFiles,
  heading: string,
  cluster: string,
): Promise<void> {
  const { written, failure } = await writeCredentialFiles(files, answer.token, answer.relay);
  if (ctx.globals(cmd).output === 'json') ctx.printJson(answer);
  else
    ctx.print(
      renderCredentials({
        heading,
        cluster,
        token: answer.token,
        tokenExpiresAt: answer.tokenExpiresAt,
        relay: answer.relay,
        written,
      }),
    );
  if (failure) throw failure;
}

/** NAME, WARM, CONNECTED, INPUT HASH, INPUT AGE, OUTPUT HASH, SKIP-WARMING; sorted by name. */
export function renderClusterTable(clusters: readonly ClusterView[], now: Date): string {
  const rows = [...clusters]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((c) => [
      c.name,
      c.warm.status,
      c.connection.connected ? 'True' : 'False',
      shortHash(c.input?.hash),
      formatAge(c.input?.receivedAt, now),
      shortHash(c.output?.hash),
      c.skipWarming ? 'True' : 'False',
    ]);
  return renderTable(['NAME', 'WARM', 'CONNECTED', 'INPUT HASH', 'INPUT AGE', 'OUTPUT HASH', 'SKIP-WARMING'], rows);
}

function parseBool(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError(`"${value}" is not true or false`);
}

/** Commander prefixes the message with the flag, e.g. `--trust-domain 'x' ... not a DNS name`. */
function parseDnsName(value: string): string {
  if (!isDnsName(value))
    throw new InvalidArgumentError(
      'not a DNS name (RFC 1123 subdomain: lowercase letters, digits, "-" and ".", labels of at most 63, at most 253 in all; e.g. cluster.local)',
    );
  return value;
}
