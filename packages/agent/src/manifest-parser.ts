import { parseAllDocuments } from 'yaml';
import { canonicalJson, findInputKind, isRecord, normalizeResource, type Resource } from '@meshrelay/api';
import type { InputProblem } from './input-problem.ts';

/** Checks one normalized resource; returns its field problems (empty when valid). */
export type ResourceValidator = (resource: Resource) => readonly { readonly path: string; readonly message: string }[];

/** A resource found in a manifest file, with where it came from. */
export interface ManifestEntry {
  readonly file: string;
  readonly document: number;
  readonly resource: Resource;
}

export interface ParsedManifest {
  readonly entries: readonly ManifestEntry[];
  readonly problems: readonly InputProblem[];
}

/** Largest number of YAML aliases expanded per document (guards against alias bombs). */
const MAX_ALIAS_COUNT = 100;

/**
 * Parses one manifest file (multi-document YAML, or JSON: one object or an
 * array) into normalized, validated resources. Never throws: every unreadable
 * document and every invalid resource becomes a problem naming the file, the
 * document index and the field, and the other documents are still returned.
 * A `kind: List` document contributes its `items`.
 */
export function parseManifest(file: string, text: string, validate: ResourceValidator): ParsedManifest {
  const entries: ManifestEntry[] = [];
  const problems: InputProblem[] = [];
  const add = (document: number, value: unknown, pathPrefix: string): void => {
    const result = toResource(value, validate, pathPrefix);
    if ('resource' in result) entries.push({ file, document, resource: result.resource });
    else for (const p of result.problems) problems.push({ file, document, path: p.path, message: p.message });
  };
  for (const [index, doc] of readDocuments(file, text, problems)) {
    if (doc === null || doc === undefined) continue;
    if (isRecord(doc) && doc['kind'] === 'List' && Array.isArray(doc['items'])) {
      doc['items'].forEach((item: unknown, i) => add(index, item, `items[${i}].`));
    } else {
      add(index, doc, '');
    }
  }
  return { entries, problems };
}

function readDocuments(file: string, text: string, problems: InputProblem[]): Array<[number, unknown]> {
  if (file.endsWith('.json')) {
    try {
      const parsed: unknown = JSON.parse(text);
      return Array.isArray(parsed) ? parsed.map((item: unknown, i): [number, unknown] => [i, item]) : [[0, parsed]];
    } catch (err) {
      problems.push({ file, document: -1, path: '', message: `not valid JSON: ${(err as Error).message}` });
      return [];
    }
  }
  const docs: Array<[number, unknown]> = [];
  parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true }).forEach((doc, index) => {
    if (doc.errors.length > 0) {
      for (const err of doc.errors) problems.push({ file, document: index, path: '', message: `not valid YAML: ${firstLine(err.message)}` });
      return;
    }
    try {
      docs.push([index, doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT })]);
    } catch (err) {
      problems.push({ file, document: index, path: '', message: `not valid YAML: ${firstLine((err as Error).message)}` });
    }
  });
  return docs;
}

function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/:$/, '');
}

type Conversion = { readonly resource: Resource } | { readonly problems: readonly { path: string; message: string }[] };

/** Shape check (enough for normalizeResource to be safe), namespace default, normalize, validate. */
function toResource(value: unknown, validate: ResourceValidator, prefix: string): Conversion {
  const shape = checkShape(value);
  if (shape.length > 0) return { problems: shape.map((p) => ({ path: prefix + p.path, message: p.message })) };
  const raw = value as Resource;
  const kindRef = findInputKind(raw.apiVersion, raw.kind);
  // As `kubectl apply` does, a namespaced object without a namespace lands in "default".
  const withNamespace =
    kindRef?.namespaced === true && (raw.metadata.namespace ?? '') === '' ? { ...raw, metadata: { ...raw.metadata, namespace: 'default' } } : raw;
  let resource: Resource;
  try {
    resource = normalizeResource(withNamespace);
    canonicalJson(resource);
  } catch (err) {
    return { problems: [{ path: prefix.replace(/\.$/, ''), message: (err as Error).message }] };
  }
  const problems = validate(resource);
  if (problems.length > 0) return { problems: problems.map((p) => ({ path: prefix + p.path, message: p.message })) };
  return { resource };
}

function checkShape(value: unknown): Array<{ path: string; message: string }> {
  if (!isRecord(value)) return [{ path: '', message: 'a document must be an object with apiVersion, kind and metadata' }];
  const problems: Array<{ path: string; message: string }> = [];
  for (const key of ['apiVersion', 'kind'] as const) {
    if (typeof value[key] !== 'string' || value[key] === '') problems.push({ path: key, message: 'is required and must be a non-empty string' });
  }
  const meta = value['metadata'];
  if (!isRecord(meta)) return [...problems, { path: 'metadata', message: 'is required and must be an object' }];
  if (typeof meta['name'] !== 'string' || meta['name'] === '') problems.push({ path: 'metadata.name', message: 'is required and must be a non-empty string' });
  if (meta['namespace'] !== undefined && typeof meta['namespace'] !== 'string') problems.push({ path: 'metadata.namespace', message: 'must be a string' });
  for (const key of ['labels', 'annotations'] as const) {
    const map = meta[key];
    if (map === undefined || map === null) continue;
    if (!isRecord(map)) problems.push({ path: `metadata.${key}`, message: 'must be a map of strings' });
    else for (const [k, v] of Object.entries(map)) if (typeof v !== 'string') problems.push({ path: `metadata.${key}.${k}`, message: 'must be a string' });
  }
  return problems;
}
