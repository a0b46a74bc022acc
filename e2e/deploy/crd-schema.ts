// What Kubernetes requires of a CRD's openAPIV3Schema (structural schemas, apiextensions.k8s.io/v1),
// and validation of objects against such a schema the way the API server would (after pruning).
import { Ajv, type ValidateFunction } from 'ajv';

type Schema = Record<string, unknown>;

const FORBIDDEN = [
  '$ref',
  'definitions',
  'id',
  '$schema',
  'additionalItems',
  'patternProperties',
  'dependencies',
  'if',
  'then',
  'else',
];
const JUNCTORS = ['allOf', 'anyOf', 'oneOf', 'not'];
const NOT_IN_JUNCTORS = ['type', 'additionalProperties', 'default', 'nullable', 'description'];
const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);

/** Every way this schema is not structural, as "path: problem" lines. */
export function structuralProblems(node: Schema, path = '$', inJunctor = false): string[] {
  const problems: string[] = [];
  const say = (what: string) => problems.push(`${path}: ${what}`);
  for (const key of FORBIDDEN) if (key in node) say(`"${key}" is not allowed`);
  if (node['uniqueItems'] === true) say('uniqueItems: true is not allowed');
  if (inJunctor) {
    for (const key of NOT_IN_JUNCTORS) if (key in node) say(`"${key}" is not allowed inside a logical junctor`);
  } else {
    const preserved =
      node['x-kubernetes-preserve-unknown-fields'] === true || node['x-kubernetes-int-or-string'] === true;
    if (!preserved && !TYPES.has(String(node['type']))) say(`needs a type, has ${JSON.stringify(node['type'])}`);
    if ('properties' in node && 'additionalProperties' in node)
      say('properties and additionalProperties are mutually exclusive');
  }
  for (const [name, child] of Object.entries((node['properties'] ?? {}) as Record<string, Schema>))
    problems.push(...structuralProblems(child, `${path}.${name}`, inJunctor));
  if (typeof node['additionalProperties'] === 'object')
    problems.push(...structuralProblems(node['additionalProperties'] as Schema, `${path}.*`, inJunctor));
  if (typeof node['items'] === 'object')
    problems.push(...structuralProblems(node['items'] as Schema, `${path}[]`, inJunctor));
  for (const junctor of JUNCTORS) {
    const value = node[junctor];
    if (value === undefined) continue;
    const members = Array.isArray(value) ? (value as Schema[]) : [value as Schema];
    members.forEach((member, i) => problems.push(...structuralProblems(member, `${path}.${junctor}[${i}]`, true)));
  }
  return problems;
}

/** Compiles an openAPIV3Schema for validation (the x-kubernetes-* extensions carry no value checks here). */
export function compileCrdSchema(schema: Schema): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, strict: false });
  for (const keyword of [
    'x-kubernetes-preserve-unknown-fields',
    'x-kubernetes-list-type',
    'x-kubernetes-list-map-keys',
    'x-kubernetes-int-or-string',
  ])
    ajv.addKeyword(keyword);
  ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  return ajv.compile(withNumericExclusiveBounds(schema) as Schema);
}

/**
 * OpenAPI v3.0 (a CRD) writes an exclusive bound as `minimum: 0, exclusiveMinimum: true`; the JSON
 * Schema Ajv checks writes it `exclusiveMinimum: 0`. Rewrites the first form into the second.
 */
function withNumericExclusiveBounds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withNumericExclusiveBounds);
  if (typeof node !== 'object' || node === null) return node;
  const out: Schema = {};
  for (const [key, value] of Object.entries(node as Schema)) out[key] = withNumericExclusiveBounds(value);
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (out[flag] === false) delete out[flag];
    if (out[flag] !== true) continue;
    out[flag] = out[bound];
    delete out[bound];
  }
  return out;
}
