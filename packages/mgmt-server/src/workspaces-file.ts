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
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--workspaces-file ${path}: cannot be read: ${(err as Error).message}`, { cause: err });
  }
  const out: Resource[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0) throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--workspaces-file ${path} document ${i}: not valid YAML: ${doc.errors[0]?.message ?? ''}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const items = isRecord(value) && value['kind'] === 'List' && Array.isArray(value['items']) ? (value['items'] as unknown[]) : [value];
    for (const item of items) {
      if (!isRecord(item) || !isRecord(item['metadata'])) throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `--workspaces-file ${path} document ${i}: must be an object with metadata`);
      out.push(item as unknown as Resource);
    }
  });
  return out;
}

/** What the API and UI say about the management plane's Workspaces. */
export interface WorkspacesView {
  /** `implicit-global`: no --workspaces-file (or an empty one), one workspace owns every namespace. */
  readonly mode: 'implicit-global' | 'defined';
  /** Names of the Workspaces read from the file (the translator judges each one; see their statuses). */
  readonly names: readonly string[];
  /** Set in implicit-global mode: what that mode allows, in an operator's words. */
  readonly notice: string | null;
}

/** Why the implicit global workspace needs care: every cluster speaks for every other. */
export const IMPLICIT_GLOBAL_NOTICE =
  'no Workspace is defined (--workspaces-file unset): every namespace of every cluster is in one implicit global workspace, so any cluster can define routes for any host, including other clusters\' *.cluster.local Services, and AccessPolicies every cluster applies';

/** Describes the Workspaces a server runs with (`[]` = none defined). */
export function describeWorkspaces(workspaces: readonly Resource[]): WorkspacesView {
  const names = [...new Set(workspaces.filter((w) => w.kind === 'Workspace').map((w) => w.metadata.name))].sort();
  if (names.length === 0) return { mode: 'implicit-global', names: [], notice: IMPLICIT_GLOBAL_NOTICE };
  return { mode: 'defined', names, notice: null };
}
