import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import { validateInputResource } from '@meshrelay/translator';
import type { AgentConfig } from './config.ts';
import { FileCredentialStore, type CredentialStore } from './credentials/credential-store.ts';
import type { DiscoveryProvider } from './discovery/discovery-provider.ts';
import { FileDiscoveryProvider } from './discovery/file-provider.ts';
import { FileStatusWriter } from './status/file-status-writer.ts';
import { ManifestGenerations } from './discovery/manifest-generations.ts';
import { kubeSupport } from './kube/kube-modules.ts';
import { KubernetesOutputApplier } from './apply/kubernetes-applier.ts';
import { KubernetesDiscoveryProvider } from './discovery/kubernetes-provider.ts';
import { KubernetesSecretCredentialStore } from './credentials/kubernetes-secret-credential-store.ts';
import { KubernetesStatusWriter } from './status/kubernetes-status-writer.ts';
import type { OutputApplier } from './apply/output-applier.ts';
import { FileOutputWriter } from './apply/output-writer.ts';
import type { StatusWriter } from './status/resource-status.ts';

/** The discovery provider and the output applier an agent config selects. */
export interface AgentBackends {
  readonly provider: DiscoveryProvider;
  readonly applier: OutputApplier;
  /**
   * Builds another provider like `provider`, never started (a new epoch unless one was given): one per leadership term.
   */
  readonly createProvider: () => DiscoveryProvider;
  /** Where the client key and certificate live: the Secret of --credentials-secret, else the state dir. */
  readonly credentials: CredentialStore;
  /**
   * Where reported statuses go: beside the manifests (file provider) or the status subresource (kubernetes provider).
   */
  readonly statuses: StatusWriter;
}

/**
 * Builds the provider (`--discovery-provider`) and the applier (`--apply`,
 * default: the same backend). The kubeconfig is loaded once, only when a
 * kubernetes backend or a credentials Secret is chosen. Throws MESHRELAY_ERR_INVALID_CONFIG naming the
 * flag when a backend lacks what it needs (a dir, a loadable kubeconfig).
 */
export function createAgentBackends(config: AgentConfig, logger: Logger, epoch?: string): AgentBackends {
  const { cluster } = config;
  const discovery = config.discoveryProvider ?? 'file';
  const apply = config.apply ?? discovery;
  let kubeConfig: KubeConfig | undefined;
  const kube = (): KubeConfig =>
    (kubeConfig ??= kubeSupport().loadKubeConfig({
      ...(config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {}),
      ...(config.kubeContext !== undefined ? { context: config.kubeContext } : {}),
    }));
  const generations = new ManifestGenerations();
  const createProvider = (): DiscoveryProvider =>
    discovery === 'kubernetes'
      ? new KubernetesDiscoveryProvider({
          cluster,
          kubeConfig: kube(),
          validate: validateInputResource,
          logger,
          namespaces: config.watchNamespaces ?? [],
          ...(config.istioNamespace !== undefined ? { istioNamespace: config.istioNamespace } : {}),
          debounceMs: config.debounceMs,
          ...(epoch !== undefined ? { epoch } : {}),
        })
      : new FileDiscoveryProvider({
          cluster,
          manifestsDir: requiredDir(config.manifestsDir, '--manifests-dir', 'with --discovery-provider file'),
          validate: validateInputResource,
          logger,
          debounceMs: config.debounceMs,
          rescanIntervalMs: config.rescanIntervalMs,
          limits: {
            ...(config.maxManifestFileBytes !== undefined ? { maxFileBytes: config.maxManifestFileBytes } : {}),
            ...(config.maxManifestsBytes !== undefined ? { maxTotalBytes: config.maxManifestsBytes } : {}),
            followExternalSymlinks: config.followExternalSymlinks === true,
          },
          generations,
          ...(epoch !== undefined ? { epoch } : {}),
        });
  const applier: OutputApplier =
    apply === 'kubernetes'
      ? new KubernetesOutputApplier({ cluster, kubeConfig: kube(), stateDir: config.stateDir, logger })
      : new FileOutputWriter({
          cluster,
          outputDir: requiredDir(config.outputDir, '--output-dir', 'with --apply file'),
          stateDir: config.stateDir,
          logger,
        });
  const credentials: CredentialStore =
    config.credentialsSecret !== undefined
      ? new KubernetesSecretCredentialStore({
          kubeConfig: kube(),
          namespace: config.credentialsNamespace,
          name: config.credentialsSecret,
          cluster,
          logger,
        })
      : new FileCredentialStore({ stateDir: config.stateDir, cluster, logger });
  const statuses: StatusWriter =
    discovery === 'kubernetes'
      ? new KubernetesStatusWriter({ kubeConfig: kube(), logger })
      : new FileStatusWriter({
          manifestsDir: requiredDir(config.manifestsDir, '--manifests-dir', 'with --discovery-provider file'),
          ...(config.statusDir !== undefined ? { statusDir: config.statusDir } : {}),
          logger,
          generations,
        });
  return { provider: createProvider(), applier, createProvider, credentials, statuses };
}

function requiredDir(dir: string | undefined, flag: string, when: string): string {
  if (dir === undefined || dir === '')
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `${flag} is required ${when}`);
  return dir;
}
