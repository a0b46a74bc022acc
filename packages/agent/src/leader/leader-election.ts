import type { Logger } from 'pino';
import type { LeaderElector } from '@meshrelay/kube';
import type { AgentConfig } from '../config.ts';
import { kubeSupport } from '../kube/kube-modules.ts';

/**
 * The elector the config asks for: undefined for `--leader-election none`, a
 * lease file for `file`, a coordination.k8s.io/v1 Lease for `kubernetes`.
 * Throws MESHRELAY_ERR_INVALID_CONFIG when the kubeconfig cannot be loaded.
 */
export function createAgentElector(config: AgentConfig, logger: Logger): LeaderElector | undefined {
  const timing = {
    identity: config.replicaId,
    leaseDurationMs: config.leaseDurationMs,
    renewDeadlineMs: config.renewDeadlineMs,
    retryPeriodMs: config.retryPeriodMs,
    logger,
  };
  switch (config.leaderElection) {
    case 'none':
      return undefined;
    case 'file':
      return kubeSupport().createFileLeaderElector({ ...timing, path: config.leaseFile ?? '' });
    case 'kubernetes': {
      const { loadKubeConfig, createKubernetesLeaderElector } = kubeSupport();
      const kubeConfig = loadKubeConfig({
        ...(config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {}),
        ...(config.kubeContext !== undefined ? { context: config.kubeContext } : {}),
      });
      return createKubernetesLeaderElector({
        ...timing,
        kubeConfig,
        namespace: config.leaseNamespace,
        name: config.leaseName,
      });
    }
  }
}
