import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { MeshrelayError, isRecord, type Resource } from '@meshrelay/api';

/**
 * Reads the management plane's Workspaces from a YAML file (documents or a `kind: List`).
 * Their content is validated by the translator, which gives each a status; only an unreadable
 * file or a document that is not an object stops the server at start.
 */
export function loadWorkspacesFile(path: string): Resource[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `--workspaces-file ${path}: cannot be read: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const out: Resource[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `--workspaces-file ${path} document ${i}: not valid YAML: ${doc.errors[0]?.message ?? ''}`,
      );
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const items =
      isRecord(value) && value['kind'] === 'List' && Array.isArray(value['items'])
        ? (value['items'] as unknown[])
        : [value];
    for (const item of items) {
      if (!isRecord(item) || !isRecord(item['metadata']))
        throw new MeshrelayError(
          'MESHRELAY_ERR_INVALID_CONFIG',
          `--workspaces-file ${path} document ${i}: must be an object with metadata`,
        );
      out.push(item as unknown as Resource);
    }
  });
  return out;
}

/** Where the management plane's Workspaces come from. */
export type WorkspacesSourceKind = 'file' | 'kubernetes' | 'none';

/** What the API and UI say about the management plane's Workspaces. */
export interface WorkspacesView {
  /** `implicit-global`: no Workspace defined, one workspace owns every namespace. */
  readonly mode: 'implicit-global' | 'defined';
  /** `file`: --workspaces-file; `kubernetes`: Workspace CRs in the management namespace; `none`: neither. */
  readonly source: WorkspacesSourceKind;
  /** Names of the Workspaces in force (the translator judges each one; see their statuses). */
  readonly names: readonly string[];
  /**
   * Set in implicit-global mode (what that mode allows, in an operator's words) and when Workspace CRs exist but none
   * is valid.
   */
  readonly notice: string | null;
  /** Workspace CRs not (or only in a previous version) in force, each naming the object and field. */
  readonly problems: readonly string[];
}

/** Why the implicit global workspace needs care: every cluster speaks for every other. */
export const IMPLICIT_GLOBAL_NOTICE =
  "no Workspace is defined (--workspaces-file unset): every namespace of every cluster is in one implicit global workspace, so any cluster can define routes for any host, including other clusters' *.cluster.local Services, and AccessPolicies every cluster applies";

const IMPLICIT_GLOBAL_REASON = {
  file: 'no Workspace is defined (--workspaces-file has none)',
  kubernetes: 'no Workspace is defined (no valid Workspace CR in the management namespace)',
  none: 'no Workspace is defined (--workspaces-file unset)',
} as const;

/** Describes the Workspaces a server runs with (`[]` = none defined). */
export function describeWorkspaces(
  workspaces: readonly Resource[],
  source: WorkspacesSourceKind = 'none',
  problems: readonly string[] = [],
): WorkspacesView {
  const names = [...new Set(workspaces.filter((w) => w.kind === 'Workspace').map((w) => w.metadata.name))].sort();
  if (names.length > 0) return { mode: 'defined', source, names, notice: null, problems };
  const notice = IMPLICIT_GLOBAL_NOTICE.replace(IMPLICIT_GLOBAL_REASON.none, IMPLICIT_GLOBAL_REASON[source]);
  return { mode: 'implicit-global', source, names: [], notice, problems };
}
