import { MeshrelayError, type KubernetesCluster } from '@meshrelay/api';
import type { RelayContext } from './relay-context.ts';
import type { TokenBinding, TokenClaim } from './token-bindings.ts';

/**
 * The cluster condition that reports a relay token presented with a second key: True from the
 * first refusal until a new token registers its first key (the operator rotated or revoked).
 */
export const RELAY_TOKEN_REUSED_CONDITION = 'RelayTokenReused';

/**
 * Acts on a registration's token claim: a reused token is reported on the cluster (condition,
 * log) and refused with MESHRELAY_ERR_TOKEN_REUSED; a new token's first key clears an earlier
 * report. A condition that cannot be written is logged; the answer to the agent stands.
 */
export async function reportTokenClaim(
  ctx: RelayContext,
  record: KubernetesCluster,
  presented: TokenBinding,
  claim: TokenClaim,
): Promise<void> {
  const cluster = record.metadata.name;
  if (claim.kind === 'reused') {
    const { binding } = claim;
    ctx.logger.warn(
      { cluster, network: presented.network, boundAt: binding.boundAt, boundNetwork: binding.network },
      'relay token presented with a second key; refused',
    );
    await setCondition(ctx, cluster, {
      type: RELAY_TOKEN_REUSED_CONDITION,
      status: 'True',
      reason: 'SecondKeyRefused',
      message: `at ${presented.boundAt} a registration from ${presented.network} presented the relay token that registered another key at ${binding.boundAt} (from ${binding.network}); it was refused. If the agent lost its key, give it a new token (meshctl cluster rotate-token ${cluster}); if the token leaked, revoke the cluster (meshctl cluster revoke ${cluster})`,
    });
    throw new MeshrelayError(
      'MESHRELAY_ERR_TOKEN_REUSED',
      `the relay token of cluster "${cluster}" already registered another key (at ${binding.boundAt}); a token registers one agent key. ` +
        `Keep the agent's key (its state dir or credentials Secret), or ask the operator for a new token (meshctl cluster rotate-token ${cluster})`,
    );
  }
  const reported = record.status?.conditions?.find((c) => c.type === RELAY_TOKEN_REUSED_CONDITION);
  if (claim.kind === 'first' && reported?.status === 'True') {
    await setCondition(ctx, cluster, {
      type: RELAY_TOKEN_REUSED_CONDITION,
      status: 'False',
      reason: 'NewTokenRegistered',
      message: `a new relay token registered its first key at ${presented.boundAt}`,
    });
  }
}

async function setCondition(
  ctx: RelayContext,
  cluster: string,
  condition: Parameters<RelayContext['registry']['setCondition']>[1],
): Promise<void> {
  try {
    await ctx.registry.setCondition(cluster, condition);
  } catch (err) {
    ctx.logger.warn(
      { err, cluster, condition: condition.type },
      'could not record the relay token condition on the cluster',
    );
  }
}
