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
