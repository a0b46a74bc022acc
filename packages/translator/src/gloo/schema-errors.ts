import type { ErrorObject } from 'ajv';

/** One thing wrong with an input resource, at a field path such as `spec.ports[0].number`. */
export interface InputProblem {
  readonly path: string;
  readonly message: string;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Appends one field (object key or array index) to a dotted path. */
export function joinPath(base: string, segment: string | number): string {
  if (typeof segment === 'number') return `${base}[${segment}]`;
  if (!IDENTIFIER.test(segment)) return `${base}[${JSON.stringify(segment)}]`;
  return base === '' ? segment : `${base}.${segment}`;
}

/** Turns a JSON pointer (`/spec/ports/0`) into a dotted path below `base`. */
export function pointerToPath(base: string, pointer: string): string {
  if (pointer === '') return base;
  let path = base;
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = joinPath(path, /^(0|[1-9][0-9]*)$/.test(segment) ? Number(segment) : segment);
  }
  return path;
}

function requiredBranches(schema: unknown): string[] | undefined {
  if (!Array.isArray(schema)) return undefined;
  const names: string[] = [];
  for (const branch of schema as unknown[]) {
    const required = (branch as { required?: unknown }).required;
    if (!Array.isArray(required) || Object.keys(branch as object).length !== 1) return undefined;
    names.push(...(required as string[]));
  }
  return names;
}

function describe(error: ErrorObject): { field?: string; message: string } {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return { field: String(params['additionalProperty']), message: 'unknown field' };
    case 'required':
      return { field: String(params['missingProperty']), message: 'is required' };
    case 'enum':
      return { message: `must be one of ${(params['allowedValues'] as unknown[]).map(String).join(', ')}` };
    case 'oneOf':
    case 'anyOf': {
      const names = requiredBranches(error.schema);
      if (names)
        return { message: `must set ${error.keyword === 'oneOf' ? 'exactly' : 'at least'} one of ${names.join(', ')}` };
      return { message: error.message ?? 'is invalid' };
    }
    case 'not': {
      const required = (error.schema as { required?: unknown }).required;
      if (Array.isArray(required)) return { message: `must not set both ${required.join(' and ')}` };
      return { message: error.message ?? 'is invalid' };
    }
    default:
      return { message: error.message ?? 'is invalid' };
  }
}

/**
 * Converts ajv errors into problems with dotted paths below `base`. Errors raised inside
 * oneOf/anyOf/not branches and "must match then schema" wrappers are dropped: the
 * combinator's own error (rewritten above) says what is wrong more plainly.
 */
export function problemsFromAjv(errors: readonly ErrorObject[] | null | undefined, base: string): InputProblem[] {
  const seen = new Set<string>();
  const problems: InputProblem[] = [];
  for (const error of errors ?? []) {
    if (error.keyword === 'if') continue;
    if (/\/(oneOf|anyOf|not)\//.test(error.schemaPath.replace(/\/(oneOf|anyOf|not)$/, ''))) continue;
    const { field, message } = describe(error);
    const at = pointerToPath(base, error.instancePath);
    const path = field === undefined ? at : joinPath(at, field);
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push({ path, message });
  }
  return problems;
}
