import { YAMLError, parseAllDocuments } from 'yaml';
import { deepFreeze, isRecord, type Resource } from '@meshrelay/api';
import type { InputProblem } from './input-problem.ts';
import { toInputResource, type ResourceValidator } from './input-resource.ts';
import { manifestGeneration } from './manifest-generations.ts';

export type { ResourceValidator } from './input-resource.ts';

/** A resource found in a manifest file, with where it came from. */
export interface ManifestEntry {
  readonly file: string;
  readonly document: number;
  /** Deep-frozen, with its members in canonical order (as a snapshot holds it). */
  readonly resource: Resource;
  /** The canonical encoding of `resource`. */
  readonly encoding: string;
  /** The document's own metadata.generation (not in `resource`: see ManifestGenerations). */
  readonly generation?: number;
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
 * A `kind: List` document contributes its `items`. Problems never quote the
 * file's text (a manifests dir may hold secrets): parser errors keep their
 * reason, line and column only.
 */
export function parseManifest(file: string, text: string, validate: ResourceValidator): ParsedManifest {
  try {
    return parseDocuments(file, text, validate);
  } catch (err) {
    // The YAML composer and the validators recurse: a deeply nested file can exhaust the stack.
    if (err instanceof RangeError)
      return { entries: [], problems: [{ file, document: -1, path: '', message: 'nests too deeply to be parsed' }] };
    throw err;
  }
}

function parseDocuments(file: string, text: string, validate: ResourceValidator): ParsedManifest {
  const entries: ManifestEntry[] = [];
  const problems: InputProblem[] = [];
  const add = (document: number, value: unknown, pathPrefix: string): void => {
    const result = toInputResource(value, validate, pathPrefix);
    if ('resource' in result) {
      const generation = manifestGeneration(value);
      const resource = deepFreeze(JSON.parse(result.encoding) as Resource);
      entries.push({
        file,
        document,
        resource,
        encoding: result.encoding,
        ...(generation === undefined ? {} : { generation }),
      });
    } else for (const p of result.problems) problems.push({ file, document, path: p.path, message: p.message });
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
      if (err instanceof RangeError) throw err;
      problems.push({ file, document: -1, path: '', message: `not valid JSON: ${jsonReason(err as Error, text)}` });
      return [];
    }
  }
  const docs: Array<[number, unknown]> = [];
  parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false }).forEach((doc, index) => {
    if (doc.errors.length > 0) {
      for (const err of doc.errors)
        problems.push({ file, document: index, path: '', message: `not valid YAML: ${yamlReason(err, text)}` });
      return;
    }
    try {
      docs.push([index, doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT })]);
    } catch (err) {
      if (err instanceof RangeError) throw err;
      problems.push({
        file,
        document: index,
        path: '',
        message: `not valid YAML: ${err instanceof YAMLError ? yamlReason(err, text) : 'an unresolved alias, or more aliases than allowed'}`,
      });
    }
  });
  return docs;
}

/**
 * `duplicate key at line 3, column 1`: the error code as words and where, never
 * the message (yaml quotes source text and token values in it).
 */
function yamlReason(err: YAMLError, text: string): string {
  const reason = err.code.toLowerCase().replaceAll('_', ' ');
  return `${reason} ${position(text, err.pos[0])}`;
}

/** V8's JSON.parse messages quote the offending text; keep the position only (and a generic reason). */
function jsonReason(err: Error, text: string): string {
  const at = /position (\d+)/.exec(err.message);
  if (at) return `unexpected input ${position(text, Number(at[1]))}`;
  return /end of JSON input/i.test(err.message) ? 'unexpected end of input' : 'cannot be parsed';
}

/** `at line L, column C` (1-based) of a character offset. */
function position(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `at line ${line}, column ${offset - lineStart + 1}`;
}
