// The management plane's own Gloo resources, from where the flags say:
// - `--workspaces-file FILE`: Workspaces read from the file at start (local runs);
// - else, with `--registry kubernetes`: Workspace CRs in the management namespace, followed as
//   they change (each change re-runs translation, as a new input does);
// - else none: one implicit global workspace.
// With `--registry kubernetes` RootTrustPolicy CRs are followed too (read, not acted on yet).

import type { Logger } from 'pino';
import type { Resource } from '@meshrelay/api';
import { loadKubeConfig } from '@meshrelay/kube';
import {
  NOT_ACTED_ON,
  startKubernetesRootTrustPolicy,
  startKubernetesWorkspaces,
  type RootTrustPolicySource,
  type RootTrustPolicyState,
  type WorkspaceSource,
} from '@meshrelay/registry';
import type { ServerConfig } from './config.ts';
import {
  describeWorkspaces,
  loadWorkspacesFile,
  type WorkspacesSourceKind,
  type WorkspacesView,
} from './workspaces-file.ts';

export interface ManagementResources {
  /** The Workspaces in force; the same array (by identity) until they change. */
  workspaces(): readonly Resource[];
  /** What the API reports about them, as of now. */
  workspacesView(): WorkspacesView;
  /** The RootTrustPolicy read from the API; undefined without the kubernetes registry. */
  rootTrustPolicy(): RootTrustPolicyState | undefined;
  /** Called with the new state after the RootTrustPolicy read changed (kubernetes registry only). */
  onRootTrustPolicyChange(listener: (state: RootTrustPolicyState) => void): () => void;
  /** Called with a reason after the Workspaces in force (or their problems) changed. */
  onWorkspacesChange(listener: (reason: string) => void): () => void;
  close(): Promise<void>;
}

/** The part of the server's config this reads. */
export type ManagementResourcesConfig = Pick<
  ServerConfig,
  'workspacesFile' | 'registry' | 'namespace' | 'kubeconfig' | 'kubeContext'
>;

/**
 * Opens the sources the config names and resolves once each has its first content. Throws
 * MESHRELAY_ERR_INVALID_CONFIG for an unreadable file, MESHRELAY_ERR_UNAVAILABLE when the
 * Workspace CRs cannot be listed (the server must not translate as if none existed).
 */
export async function openManagementResources(
  config: ManagementResourcesConfig,
  logger: Logger,
): Promise<ManagementResources> {
  const fromFile = config.workspacesFile === undefined ? undefined : loadWorkspacesFile(config.workspacesFile);
  if (config.registry !== 'kubernetes')
    return staticResources(fromFile ?? [], fromFile === undefined ? 'none' : 'file');
  const kubeConfig = loadKubeConfig({
    ...(config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {}),
    ...(config.kubeContext !== undefined ? { context: config.kubeContext } : {}),
  });
  const common = { kubeConfig, namespace: config.namespace };
  const trust = await startKubernetesRootTrustPolicy({
    ...common,
    logger: logger.child({ component: 'root-trust-policy' }),
  });
  reportTrust(trust, logger);
  if (fromFile !== undefined) {
    logger.info(
      { file: config.workspacesFile },
      'Workspaces from --workspaces-file; Workspace CRs in the management namespace are not read',
    );
    return {
      ...staticResources(fromFile, 'file'),
      rootTrustPolicy: () => trust.current(),
      onRootTrustPolicyChange: (listener) => trust.onChange(listener),
      close: () => trust.close(),
    };
  }
  let workspaces: WorkspaceSource;
  try {
    workspaces = await startKubernetesWorkspaces({ ...common, logger: logger.child({ component: 'workspaces' }) });
  } catch (err) {
    await trust.close();
    throw err;
  }
  logger.info(
    { namespace: config.namespace, workspaces: workspaces.list().map((w) => w.metadata.name) },
    'Workspaces from Workspace CRs in the management namespace',
  );
  return {
    workspaces: () => (noneValid(workspaces) ? NO_VALID_WORKSPACE : workspaces.list()),
    workspacesView: () =>
      noneValid(workspaces)
        ? {
            mode: 'defined',
            source: 'kubernetes',
            names: [],
            notice: NONE_VALID_NOTICE,
            problems: workspaces.problems(),
          }
        : describeWorkspaces(workspaces.list(), 'kubernetes', workspaces.problems()),
    rootTrustPolicy: () => trust.current(),
    onRootTrustPolicyChange: (listener) => trust.onChange(listener),
    onWorkspacesChange: (listener) => workspaces.onChange(() => listener('Workspace CRs changed')),
    close: async () => {
      await workspaces.close();
      await trust.close();
    },
  };
}

/**
 * Workspace CRs exist but none was ever valid. Falling back to the implicit global workspace would
 * open every namespace to every other — the opposite of what the operator's Workspaces ask for — so
 * a Workspace that owns nothing is in force instead: no Gloo resource belongs to a workspace, each
 * is reported so, and the blast-radius guard holds outputs that would lose much.
 */
function noneValid(source: WorkspaceSource): boolean {
  return source.list().length === 0 && source.problems().length > 0;
}

const NO_VALID_WORKSPACE: readonly Resource[] = Object.freeze([
  Object.freeze({
    apiVersion: 'admin.gloo.solo.io/v2',
    kind: 'Workspace',
    metadata: Object.freeze({ name: 'meshrelay-no-valid-workspace', namespace: 'meshrelay-none' }),
    spec: Object.freeze({
      workloadClusters: [{ name: 'meshrelay-no-valid-workspace', namespaces: [{ name: 'meshrelay-none' }] }],
    }),
  }) as Resource,
]);

const NONE_VALID_NOTICE =
  'Workspace CRs exist but none is valid: no workspace is in force, so no Gloo resource is translated ' +
  '(the plane does not fall back to one global workspace); fix the Workspaces named in problems';

function staticResources(workspaces: readonly Resource[], source: WorkspacesSourceKind): ManagementResources {
  const view = describeWorkspaces(workspaces, source);
  return {
    workspaces: () => workspaces,
    workspacesView: () => view,
    rootTrustPolicy: () => undefined,
    onRootTrustPolicyChange: () => () => undefined,
    onWorkspacesChange: () => () => undefined,
    close: async () => undefined,
  };
}

/** The start-up line about the RootTrustPolicy; later changes are logged by the source. */
function reportTrust(trust: RootTrustPolicySource, logger: Logger): void {
  const { policy, served } = trust.current();
  if (policy !== undefined) return;
  logger.info(
    { served },
    served
      ? `no RootTrustPolicy in the management namespace (${NOT_ACTED_ON} when one exists)`
      : 'RootTrustPolicy is not served by the API (no CRD); none is read',
  );
}

/**
 * A WorkspacesView whose fields are read at each use (the HTTP API serialises it per request),
 * so the API follows Workspace CRs without a way of its own to ask.
 */
export function liveWorkspacesView(resources: ManagementResources): WorkspacesView {
  return {
    get mode() {
      return resources.workspacesView().mode;
    },
    get source() {
      return resources.workspacesView().source;
    },
    get names() {
      return resources.workspacesView().names;
    },
    get notice() {
      return resources.workspacesView().notice;
    },
    get problems() {
      return resources.workspacesView().problems;
    },
  };
}
