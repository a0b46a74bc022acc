import { createRequire } from 'node:module';
import type * as KubeClient from '@kubernetes/client-node';
import type * as KubeSupport from '@meshrelay/kube';

// @kubernetes/client-node (and @meshrelay/kube, which loads it) adds much memory to a process (see
// docs/design/decisions/README.md#agent-lazy-kube-client). An agent with the file provider, the
// file applier and no Kubernetes lease never needs it, so these modules are loaded on first use
// instead of at start.
const loadModule = createRequire(import.meta.url);

/** @kubernetes/client-node, loaded on first call. */
export function kubeClient(): typeof KubeClient {
  return loadModule('@kubernetes/client-node') as typeof KubeClient;
}

/** @meshrelay/kube (kubeconfig loading, lease electors), loaded on first call. */
export function kubeSupport(): typeof KubeSupport {
  return loadModule('@meshrelay/kube') as typeof KubeSupport;
}
