import { parseAllDocuments } from 'yaml';
import { isRecord, type Resource } from '@meshrelay/api';
import type { InputProblem } from './input-problem.ts';
import { toInputResource, type ResourceValidator } from './input-resource.ts';

export type { ResourceValidator } from './input-resource.ts';

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
    const result = toInputResource(value, validate, pathPrefix);
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
