// The management plane's own Gloo resources, from where the flags say:
// - `--workspaces-file FILE`: Workspaces read from the file at start (local runs);
// - else, with `--registry kubernetes`: Workspace CRs in the management namespace, followed as
//   they change (each change re-runs translation, as a new input does);
// - else none: one implicit global workspace.
// The RootTrustPolicy in force (the mesh trust acts on it): `--root-trust-policy FILE` read at
// start, else with `--registry kubernetes` the RootTrustPolicy CRs followed as they change, else none.

import type { Logger } from 'pino';
import type { Resource } from '@meshrelay/api';
import { loadKubeConfig } from '@meshrelay/kube';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { MeshrelayError } from '@meshrelay/api';
import {
  parseRootTrustPolicy,
  startKubernetesRootTrustPolicy,
  startKubernetesWorkspaces,
  type RootTrustPolicy,
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
  /** The RootTrustPolicy read (file or CR); undefined when neither is configured. */
  rootTrustPolicy(): RootTrustPolicyState | undefined;
  /** Called with the new state after the RootTrustPolicy read changed (CRs only: a file is read once). */
  onRootTrustPolicyChange(listener: (state: RootTrustPolicyState) => void): () => void;
  /** Called with a reason after the Workspaces in force (or their problems) changed. */
  onWorkspacesChange(listener: (reason: string) => void): () => void;
  close(): Promise<void>;
}

/** The part of the server's config this reads. */
export type ManagementResourcesConfig = Pick<
  ServerConfig,
  'workspacesFile' | 'registry' | 'namespace' | 'kubeconfig' | 'kubeContext' | 'rootTrustPolicyFile'
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
  const trustFile =
    config.rootTrustPolicyFile === undefined ? undefined : loadRootTrustPolicyFile(config.rootTrustPolicyFile);
  const resources = await openResources(config, fromFile, logger);
  if (trustFile === undefined) return resources;
  logger.info(
    { file: config.rootTrustPolicyFile, policy: `${trustFile.namespace}/${trustFile.name}` },
    'RootTrustPolicy from --root-trust-policy; RootTrustPolicy CRs are not read',
  );
  const state: RootTrustPolicyState = { policy: trustFile, problems: [], served: true };
  return { ...resources, rootTrustPolicy: () => state, onRootTrustPolicyChange: () => () => undefined };
}

/**
 * Reads the RootTrustPolicy of `--root-trust-policy`: one object, checked as a CR is. Throws
 * MESHRELAY_ERR_INVALID_CONFIG naming the file and the field (the server does not start on it).
 */
export function loadRootTrustPolicyFile(path: string): RootTrustPolicy {
  const fail = (why: string, cause?: unknown) =>
    new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--root-trust-policy ${path}: ${why}`, { cause });
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw fail(`cannot be read: ${(err as Error).message}`, err);
  }
  const docs = parseAllDocuments(text).filter((d) => d.contents !== null);
  if (docs.length !== 1) throw fail(`must hold exactly one RootTrustPolicy, found ${docs.length} documents`);
  const doc = docs[0];
  if (doc === undefined || doc.errors.length > 0) throw fail(`not valid YAML: ${doc?.errors[0]?.message ?? ''}`);
  const value: unknown = doc.toJS();
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (kind !== 'RootTrustPolicy') throw fail(`kind must be RootTrustPolicy, not ${JSON.stringify(kind)}`);
  const parsed = parseRootTrustPolicy(value);
  if ('problem' in parsed) throw fail(parsed.problem);
  return parsed.value;
}

async function openResources(
  config: ManagementResourcesConfig,
  fromFile: Resource[] | undefined,
  logger: Logger,
): Promise<ManagementResources> {
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
  if (config.rootTrustPolicyFile === undefined) reportTrust(trust, logger);
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
      ? 'no RootTrustPolicy in the management namespace: mesh trust is off until one exists'
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
