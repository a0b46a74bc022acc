import type { KubeConfig } from '@kubernetes/client-node';
import { kubeClient } from './kube-client.ts';
import { MeshrelayError } from '@meshrelay/api';

export interface KubeConfigSource {
  /** A kubeconfig file; without it, in-cluster configuration (the pod's service account). */
  readonly kubeconfig?: string;
  /** A context of that kubeconfig (default: its current-context). */
  readonly context?: string;
}

/**
 * Loads the Kubernetes client configuration: from `kubeconfig` (optionally a
 * named `context` of it), or, when no file is given, from the pod's service
 * account. Throws MESHRELAY_ERR_INVALID_CONFIG naming the flag when the file
 * cannot be read, the context does not exist, or no file is given outside a pod.
 */
export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  const config = new (kubeClient().KubeConfig)();
  if (source.kubeconfig !== undefined) {
    try {
      config.loadFromFile(source.kubeconfig);
    } catch (err) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `--kubeconfig: cannot load ${source.kubeconfig}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  } else {
    if (source.context !== undefined) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        '--kube-context needs --kubeconfig (in-cluster configuration has one context)',
      );
    }
    if (!process.env['KUBERNETES_SERVICE_HOST'] || !process.env['KUBERNETES_SERVICE_PORT']) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        '--kubeconfig is required outside a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set)',
      );
    }
    config.loadFromCluster();
  }
  if (source.context !== undefined) {
    if (!config.getContextObject(source.context)) {
      const known =
        config
          .getContexts()
          .map((c) => c.name)
          .join(', ') || 'none';
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `--kube-context: no context "${source.context}" in ${source.kubeconfig} (contexts: ${known})`,
      );
    }
    config.setCurrentContext(source.context);
  }
  if (!config.getCurrentCluster()) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `--kubeconfig: ${source.kubeconfig ?? 'in-cluster configuration'} has no cluster for its current context`,
    );
  }
  return config;
}
