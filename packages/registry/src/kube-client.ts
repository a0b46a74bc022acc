import { createRequire } from 'node:module';
import type * as KubeClient from '@kubernetes/client-node';

// @kubernetes/client-node costs ~0.5 CPU-seconds and ~50 MB to load (see
// docs/design/decisions/README.md#lazy-kube-client). A process that never talks to the Kubernetes
// API (a server with the file registry, meshctl against a local server, most tests) never loads
// it: the value imports below go through kubeClient(), on first use. (@meshrelay/kube has the same
// loader; the layering keeps the registry from importing that package.)
const loadModule = createRequire(import.meta.url);

/** @kubernetes/client-node, loaded on first call. */
export function kubeClient(): typeof KubeClient {
  return loadModule('@kubernetes/client-node') as typeof KubeClient;
}
