import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ErrorObject } from 'ajv';
import { parseAllDocuments } from 'yaml';
import { KINDS, isRecord } from '@meshrelay/api';
import { schemaValidators, type SchemaSet } from '../src/schema-validators.ts';
import { istioSchemaSet } from '../src/istio/istio-validator.ts';
import { INPUT_SCHEMA_SET } from '../src/gloo/input-validation.ts';

const TESTDATA = join(import.meta.dirname, 'testdata');
const CRD_TEXT = readFileSync(join(import.meta.dirname, '../schemas/istio-crd-all.gen.yaml'), 'utf8');

/** Every resource of the golden cases' `name` files (input.yaml or output.yaml). */
function golden(name: string): Record<string, unknown>[] {
  return readdirSync(TESTDATA).flatMap((dir) =>
    parseAllDocuments(readFileSync(join(TESTDATA, dir, name), 'utf8'))
      .map((doc) => doc.toJS() as unknown)
      .filter(isRecord),
  );
}

/** The value with one leaf or node replaced by a value of the wrong type, once per place (at most `limit`). */
function mutations(value: unknown, limit: number): unknown[] {
  const out: unknown[] = [];
  const visit = (node: unknown, replace: (v: unknown) => unknown): void => {
    if (out.length >= limit) return;
    if (Array.isArray(node)) {
      out.push(replace({ not: 'a list' }));
      node.forEach((item, i) => visit(item, (v) => replace(node.map((x, j) => (i === j ? v : x)))));
    } else if (isRecord(node)) {
      out.push(replace(['not', 'an', 'object']));
      out.push(replace({ ...node, unknownField: true }));
      for (const key of Object.keys(node)) visit(node[key], (v) => replace({ ...node, [key]: v }));
    } else {
      out.push(replace(typeof node === 'string' ? 12345 : 'not-a-number-nor-flag'));
    }
  };
  visit(value, (v) => v);
  return out;
}

/** What a validator reports, in a form to compare: the verdict and each error without its data. */
function report(validate: (v: unknown) => boolean, errors: () => ErrorObject[] | null | undefined, v: unknown) {
  const valid = validate(v);
  return {
    valid,
    errors: (errors() ?? []).map((e) => ({ ...e, data: undefined, schema: JSON.stringify(e.schema) })),
  };
}

/** The same set, with a digest no generated module has: every validator is compiled from its schema. */
function compiledAtRunTime(set: SchemaSet): SchemaSet {
  return { ...set, digest: () => 'a digest no generated module has' };
}

/** Checks every case with both the generated and the compiled validators; returns how many were (in)valid. */
function compare(set: SchemaSet, cases: [name: string, value: unknown][]): { valid: number; invalid: number } {
  const generated = schemaValidators(set);
  const compiled = schemaValidators(compiledAtRunTime(set));
  assert.equal(generated.generated, true, `${set.file} is not current: run "npm run validators"`);
  assert.equal(compiled.generated, false);
  const counts = { valid: 0, invalid: 0 };
  for (const [name, value] of cases) {
    const g = generated(name);
    const c = compiled(name);
    const fromGenerated = report(g, () => g.errors, value);
    assert.deepEqual(
      report(c, () => c.errors, value),
      fromGenerated,
      `${name}: ${JSON.stringify(value)}`,
    );
    counts[fromGenerated.valid ? 'valid' : 'invalid']++;
  }
  return counts;
}

describe('schema validators generated ahead of time', () => {
  it('given every golden output and one-field mutations of it, when validated by the generated and the compiled output validators, then each gives the same verdict and the same errors', () => {
    const set = istioSchemaSet(CRD_TEXT);
    const cases: [string, unknown][] = [];
    for (const r of golden('output.yaml')) {
      const id = `${String(r['apiVersion'])}/${String(r['kind'])}`;
      if (!set.names.includes(id)) continue;
      cases.push([id, r['spec']], ...mutations(r['spec'], 60).map((m): [string, unknown] => [id, m]));
      const endpoints = isRecord(r['spec']) ? r['spec']['endpoints'] : undefined;
      if (Array.isArray(endpoints))
        for (const e of endpoints.slice(0, 3))
          cases.push(
            ['ServiceEntry endpoint', e],
            ...mutations(e, 10).map((m): [string, unknown] => ['ServiceEntry endpoint', m]),
          );
    }
    const counts = compare(set, cases);
    assert.ok(counts.valid >= 50 && counts.invalid >= 500, JSON.stringify(counts));
  });

  it('given every golden input and one-field mutations of it, when validated by the generated and the compiled input validators, then each gives the same verdict and the same errors', () => {
    const cases: [string, unknown][] = [];
    for (const r of golden('input.yaml')) {
      const id = `${String(r['apiVersion'])}/${String(r['kind'])}`;
      if (!INPUT_SCHEMA_SET.names.includes(id)) continue;
      const gloo = String(r['apiVersion']).includes('.solo.io/');
      const target = gloo ? r['spec'] : r;
      cases.push([id, target], ...mutations(target, 40).map((m): [string, unknown] => [id, m]));
    }
    const counts = compare(INPUT_SCHEMA_SET, cases);
    assert.ok(counts.valid >= 20 && counts.invalid >= 500, JSON.stringify(counts));
  });

  it('given a CRD bundle other than the one the code was generated from, when its validators are made, then they are compiled from that bundle', () => {
    const vs = `${KINDS.VirtualService.apiVersion}/${KINDS.VirtualService.kind}`;
    // The same bundle with VirtualService's `hosts` items made integers instead of strings.
    const edited = CRD_TEXT.replace(
      /(name: virtualservices\.networking\.istio\.io[\s\S]*?hosts:\n(\s+)description: [^\n]*\n\s+items:\n\s+)type: string/,
      '$1type: integer',
    );
    assert.notEqual(edited, CRD_TEXT);
    const shipped = schemaValidators(istioSchemaSet(CRD_TEXT));
    const other = schemaValidators(istioSchemaSet(edited));
    assert.equal(shipped.generated, true);
    assert.equal(other.generated, false);
    assert.equal(shipped(vs)({ hosts: ['reviews'] }), true);
    assert.equal(other(vs)({ hosts: ['reviews'] }), false);
    assert.equal(other(vs)({ hosts: [7] }), true);
  });

  it('given a name not in the set, when its validator is asked for, then it throws naming the set', () => {
    assert.throws(
      () => schemaValidators(INPUT_SCHEMA_SET)('example.com/v1/Unknown'),
      /no schema named .* in input-validators\.js/,
    );
  });
});
