// Generates the translator's schema validators ahead of time (packages/translator/src/gen/): the
// Istio output kinds' from the shipped CRD bundle and the input kinds' from the translator's own
// schemas, so no process compiles them at start (see packages/translator/src/schema-validators.ts).
// With --check it generates in memory and fails when a committed file differs.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
// The translator exports neither set from its public surface; this tool reads them at their source.
import { generatedModuleText, type SchemaSet } from '../packages/translator/src/schema-validators.ts';
import { istioSchemaSet } from '../packages/translator/src/istio/istio-validator.ts';
import { INPUT_SCHEMA_SET } from '../packages/translator/src/gloo/input-validation.ts';

const root = resolve(import.meta.dirname, '..');
const GEN_DIR = join(root, 'packages/translator/src/gen');
const CRD_FILE = join(root, 'packages/translator/schemas/istio-crd-all.gen.yaml');

const sets: SchemaSet[] = [istioSchemaSet(readFileSync(CRD_FILE, 'utf8')), INPUT_SCHEMA_SET];

function current(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The files of `set`'s generated module: the code and its declarations. */
function files(set: SchemaSet): [path: string, text: string][] {
  const { js, dts } = generatedModuleText(set);
  return [
    [join(GEN_DIR, set.file), js],
    [join(GEN_DIR, set.file.replace(/\.js$/, '.d.ts')), dts],
  ];
}

if (process.argv.includes('--check')) {
  const stale = sets.filter((set) => files(set).some(([path, text]) => current(path) !== text));
  if (stale.length > 0) {
    console.error(
      `generated validators are stale: ${stale.map((s) => `packages/translator/src/gen/${s.file}`).join(', ')}; run "npm run validators"`,
    );
    process.exit(1);
  }
  console.log('generated validators are up to date');
} else {
  for (const set of sets) {
    for (const [path, text] of files(set)) writeFileSync(path, text);
    console.log(`wrote packages/translator/src/gen/${set.file} and its declarations`);
  }
}
