/**
 * Golden-file tests: each test/testdata/<case>/input.yaml is translated and the rendered
 * result compared with output.yaml. Run with UPDATE_GOLDEN=1 to rewrite the expected files.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createIstioValidator, InputJudgements, translate, validateInputResources } from '../src/index.ts';
import { TESTDATA, parseCase, renderResult } from './support.ts';

const UPDATE = process.env['UPDATE_GOLDEN'] === '1';
const validator = createIstioValidator();

describe('golden translations', () => {
  const cases = readdirSync(TESTDATA, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

  it('given the testdata directory, when listing cases, then there is at least one case', () => {
    assert.ok(cases.length > 0);
  });

  for (const name of cases) {
    it(`given case ${name}, when translated, then the result matches output.yaml`, () => {
      const dir = join(TESTDATA, name);
      const { input } = parseCase(readFileSync(join(dir, 'input.yaml'), 'utf8'));
      const result = translate(input, validator);
      for (const output of result.outputs.values()) {
        for (const r of output.resources)
          assert.deepEqual(validator.validate(r), [], `${output.cluster} ${r.kind} ${r.metadata.name}`);
      }
      const rendered = renderResult(result);
      const expectedFile = join(dir, 'output.yaml');
      if (UPDATE) writeFileSync(expectedFile, rendered);
      assert.ok(existsSync(expectedFile), `${expectedFile} is missing: run with UPDATE_GOLDEN=1`);
      assert.equal(rendered, readFileSync(expectedFile, 'utf8'));
    });

    it(`given case ${name}, when the inputs intake finds clean are recorded as judged, then translation gives the same result without judging them again`, () => {
      const dir = join(TESTDATA, name);
      const { input } = parseCase(readFileSync(join(dir, 'input.yaml'), 'utf8'));
      const judgements = new InputJudgements();
      for (const snapshot of input.inputs.values()) {
        const judged = validateInputResources(snapshot.resources);
        if (judged.rejected.length === 0 && judged.carried.length === 0) judgements.record(snapshot.resources, true);
        assert.equal(
          judgements.isClean(snapshot.resources),
          judged.rejected.length === 0 && judged.carried.length === 0,
        );
      }
      assert.equal(
        renderResult(translate({ ...input, judgements }, validator)),
        readFileSync(join(dir, 'output.yaml'), 'utf8'),
      );
    });
  }
});
