/**
 * `meshctl cluster revoke NAME`: every client certificate issued to the cluster so far stops
 * working at once on every management replica (their streams close), and the cluster gets a new
 * relay identity token while the old ones stop working. The agent, refused, registers again with
 * whatever token it is given next: hand it the printed one. Through the HTTP API, or with
 * --kubeconfig straight through the Kubernetes API (token Secret + spec.revokeCertificatesBefore
 * on the KubernetesCluster CR), like `cluster register`.
 */
import type { Command } from 'commander';
import { DNS_LABEL } from '@meshrelay/api';
import { loadKubeConfig } from '@meshrelay/kube';
import { readClusterObject, registryApis, revokeClusterInKubernetes, tokenSecretName } from '@meshrelay/registry';
import { clusterArgument, usageError, type CliContext } from '../cli-context.ts';
import { checkCredentialFiles, writeCredentialFiles, type CredentialFiles } from './agent-credentials.ts';
import { DEFAULT_TOKEN_TTL_SECONDS, TOKEN_TTL_HELP, parseTokenTtl } from './cluster-kubernetes.ts';

interface RevokeFlags extends CredentialFiles {
  readonly kubeconfig?: string;
  readonly kubeContext?: string;
  readonly namespace: string;
  readonly tokenTtl: string;
}

/** What a revocation through the Kubernetes API printed (and `-o json` answers). */
export interface KubernetesRevocationOutput {
  readonly cluster: { readonly name: string; readonly namespace: string };
  readonly revokedBefore: string;
  readonly tokenSecret: string;
  readonly token: string;
  readonly tokenExpiresAt: string;
}

export function addRevokeCommand(cluster: Command, ctx: CliContext, handOver: HandOver): void {
  cluster
    .command('revoke')
    .description(
      'void every client certificate issued to the cluster so far (on every replica, at once) and replace its token',
    )
    .addArgument(clusterArgument())
    .option('--token-out <file>', 'also write the new token to this file (mode 0600)')
    .option('--ca-out <file>', 'also write the relay root CA bundle to this file (HTTP API only)')
    .option(
      '--kubeconfig <file>',
      'revoke through the Kubernetes API of the management cluster (kubernetes registry) instead of the HTTP API',
    )
    .option('--kube-context <context>', 'context of --kubeconfig (default: its current-context)')
    .option('--namespace <namespace>', 'management namespace (with --kubeconfig)', 'gloo-mesh')
    .option(
      '--token-ttl <duration>',
      `lifetime of the new token: ${TOKEN_TTL_HELP} (with --kubeconfig; over the HTTP API the server decides)`,
      String(DEFAULT_TOKEN_TTL_SECONDS),
    )
    .action(async (name: string, flags: RevokeFlags, cmd: Command) => {
      if (flags.kubeconfig !== undefined)
        return revokeThroughKubernetes(ctx, cmd, name, flags as RevokeFlags & { kubeconfig: string });
      const stray = ['kubeContext', 'tokenTtl', 'namespace'].filter((key) => cmd.getOptionValueSource(key) === 'cli');
      if (stray.length > 0)
        throw usageError(
          `${stray.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} needs --kubeconfig`,
        );
      await checkCredentialFiles(flags);
      const answer = await ctx.client(cmd).revokeCluster(name);
      await handOver(
        ctx,
        cmd,
        answer,
        flags,
        `Cluster "${name}" revoked: certificates issued before ${answer.revokedBefore} no longer work, and every earlier token is void. Give the agent this new token; it registers again with it.`,
        name,
      );
    });
}

/** The hand-over of cluster.ts (files, then the text or JSON an operator needs). */
export type HandOver = (
  ctx: CliContext,
  cmd: Command,
  answer: { token: string; tokenExpiresAt: string; relay: { address: string; caBundlePem: string } },
  files: CredentialFiles,
  heading: string,
  cluster: string,
) => Promise<void>;

async function revokeThroughKubernetes(
  ctx: CliContext,
  cmd: Command,
  name: string,
  flags: RevokeFlags & { kubeconfig: string },
): Promise<void> {
  if (!DNS_LABEL.test(flags.namespace)) throw usageError(`--namespace: "${flags.namespace}" is not a DNS-1123 label`);
  const tokenTtlSeconds = parseTokenTtl(flags.tokenTtl);
  if (flags.caOut !== undefined)
    throw usageError('--ca-out: the relay root CA is not read with --kubeconfig; take it from `cluster register`');
  await checkCredentialFiles(flags);
  const apis = registryApis(
    loadKubeConfig({
      kubeconfig: flags.kubeconfig,
      ...(flags.kubeContext !== undefined ? { context: flags.kubeContext } : {}),
    }),
  );
  const object = await readClusterObject(apis, flags.namespace, name);
  const revoked = await revokeClusterInKubernetes(
    apis,
    flags.namespace,
    { name, uid: object.metadata?.uid ?? '' },
    {
      now: ctx.now(),
      tokenTtlSeconds,
    },
  );
  const output: KubernetesRevocationOutput = {
    cluster: { name, namespace: flags.namespace },
    revokedBefore: revoked.revokedBefore.toISOString(),
    tokenSecret: tokenSecretName(name),
    token: revoked.issued.token,
    tokenExpiresAt: revoked.issued.expiresAt.toISOString(),
  };
  const { written, failure } = await writeCredentialFiles(
    { ...(flags.tokenOut !== undefined ? { tokenOut: flags.tokenOut } : {}) },
    output.token,
    { address: '', caBundlePem: '' },
  );
  if (ctx.globals(cmd).output === 'json') ctx.printJson(output);
  else {
    ctx.print(
      [
        `Cluster "${name}" revoked through the Kubernetes API: KubernetesCluster ${flags.namespace}/${name} has spec.revokeCertificatesBefore ${output.revokedBefore}; every earlier token in Secret ${flags.namespace}/${output.tokenSecret} is void.`,
        '',
        `Relay identity token:  ${output.token}`,
        `Token expires at:      ${output.tokenExpiresAt}`,
        'The token is shown only now: only its hash is stored.',
        ...(written.tokenFile !== undefined ? [`Token written to:      ${written.tokenFile} (mode 0600)`] : []),
        '',
        'Give it to the agent (e.g. replace the token in its relay-identity-token-secret); it registers again with it.',
      ].join('\n') + '\n',
    );
  }
  if (failure) throw failure;
}
