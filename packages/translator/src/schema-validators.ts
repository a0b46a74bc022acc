/**
 * Schema validators compiled ahead of time. Compiling the schemas with Ajv cost every server and
 * agent start far more than loading the code Ajv generates for them once (see
 * docs/design/decisions/README.md#schema-validators-generated). `scripts/gen-validators.ts` writes
 * each set's code into `src/gen/` with the digest of what it was compiled from; the set's module
 * imports it like any other code, and `npm test` fails when a committed file is stale.
 *
 * The generated code is a cache, never the truth: when its digest is not the digest of the
 * schemas in hand (another CRD file, a schema edited without regenerating), each validator is
 * compiled from the schemas at first use, as if no code had been generated.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Ajv, Format, ValidateFunction } from 'ajv';
import type * as AjvModule from 'ajv';

/** What a generated module exports (see generatedModuleText). */
export interface GeneratedValidators {
  /** The digest of the set it was generated from. */
  readonly DIGEST: string;
  /** Makes the validators, by name, with the set's formats. */
  validators(formats: Readonly<Record<string, Format>>): Record<string, ValidateFunction>;
}

/** A named set of schemas compiled with one Ajv setup. */
export interface SchemaSet {
  /** The generated module's file name in `src/gen/`. */
  readonly file: string;
  /** The generated module, imported by the set's module like any other code. */
  readonly generated: GeneratedValidators;
  /** What the schemas come from, for the generated file's header. */
  readonly source: string;
  /**
   * The digest of everything the compiled code depends on (the schemas' text or values and how
   * they are transformed); cheap enough to compute at every start.
   */
  digest(): string;
  /** The names of the set's validators. */
  readonly names: readonly string[];
  /** The schema of one validator, built when it is compiled at run time or generated. */
  schema(name: string): object;
  /** Formats the schemas use, passed to the generated code at load time. */
  readonly formats: Readonly<Record<string, Format>>;
  /** Keywords that carry no check (annotations Ajv must not call unknown). */
  readonly vocabulary: readonly string[];
}

/** The same options for generated and run-time compiled code, so both report the same errors. */
const AJV_OPTIONS = { allErrors: true, strict: false, verbose: true } as const;

/** A SHA-256 over `parts`, each length-prefixed so no two lists of parts digest alike. */
export function digestOf(parts: readonly string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(`${part.length}:`).update(part);
  return hash.digest('hex');
}

const requireHere = createRequire(import.meta.url);

/** Ajv itself loads only where a schema is compiled: a process on generated code never loads it. */
function ajvFor(set: SchemaSet, generating: boolean): Ajv {
  const { Ajv, _ } = requireHere('ajv') as typeof AjvModule;
  const ajv = new Ajv(generating ? { ...AJV_OPTIONS, code: { source: true, formats: _`formats` } } : AJV_OPTIONS);
  ajv.addVocabulary([...set.vocabulary]);
  for (const [name, format] of Object.entries(set.formats)) ajv.addFormat(name, format);
  return ajv;
}

/** Each validator of a set by name (unknown names throw). */
export interface SchemaValidators {
  (name: string): ValidateFunction;
  /** Whether they come from the generated code (else each is compiled from its schema at first use). */
  readonly generated: boolean;
}

/**
 * The validators of `set`: from the generated code when it is current, otherwise each compiled
 * from its schema on first use.
 */
export function schemaValidators(set: SchemaSet): SchemaValidators {
  const generated = set.generated.DIGEST === set.digest() ? set.generated.validators(set.formats) : undefined;
  // Asked once per validated resource: a map lookup, the name checked only before compiling.
  const known = new Map(Object.entries(generated ?? {}));
  let ajv: Ajv | undefined;
  const names = new Set(set.names);
  const validator = (name: string): ValidateFunction => {
    let fn = known.get(name);
    if (!fn) {
      if (!names.has(name)) throw new Error(`no schema named ${name} in ${set.file}`);
      ajv ??= ajvFor(set, false);
      fn = ajv.compile(set.schema(name));
      known.set(name, fn);
    }
    return fn;
  };
  return Object.assign(validator, { generated: generated !== undefined });
}

/**
 * The source text of `set`'s generated module and of its declarations. The code Ajv writes
 * requires its runtime helpers; the module imports them instead (so it loads as any other ES
 * module, with no file read after it is imported) and hands them to that code by name.
 */
export function generatedModuleText(set: SchemaSet): { readonly js: string; readonly dts: string } {
  const ajv = ajvFor(set, true);
  for (const name of set.names) ajv.addSchema(set.schema(name), name);
  const standalone = requireHere('ajv/dist/standalone/index.js') as {
    default: (ajv: Ajv, refs: Record<string, string>) => string;
  };
  const code = standalone.default(ajv, Object.fromEntries(set.names.map((name) => [name, name])));
  const helpers = [...new Set([...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1] as string))].sort();
  const header = `// Generated by scripts/gen-validators.ts from ${set.source}. Do not edit; run "npm run validators".`;
  const js = [
    header,
    ...helpers.map((id, i) => `import helper${i} from ${JSON.stringify(`${id}.js`)};`),
    `const HELPERS = { ${helpers.map((id, i) => `${JSON.stringify(id)}: helper${i}`).join(', ')} };`,
    `export const DIGEST = ${JSON.stringify(set.digest())};`,
    'export function validators(formats) {',
    'const require = (id) => HELPERS[id];',
    'const exports = {};',
    code,
    'return exports;',
    '}',
    '',
  ].join('\n');
  const dts = [
    header,
    "import type { Format, ValidateFunction } from 'ajv';",
    'export declare const DIGEST: string;',
    'export declare function validators(formats: Readonly<Record<string, Format>>): Record<string, ValidateFunction>;',
    '',
  ].join('\n');
  return { js, dts };
}
