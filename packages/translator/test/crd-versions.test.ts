import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { isRecord } from '@meshrelay/api';
import { v1VersionOf } from '../src/istio/crd-versions.ts';

const bundle = readFileSync(new URL('../schemas/istio-crd-all.gen.yaml', import.meta.url), 'utf8');
const documents = bundle.split(/^---[ \t]*$/m).filter((doc) => doc.trim() !== '');

/** The v1 entry as a full parse of the document finds it. */
function parsedV1(doc: string): unknown {
  const crd: unknown = parse(doc);
  const versions =
    isRecord(crd) && isRecord(crd['spec']) && Array.isArray(crd['spec']['versions'])
      ? (crd['spec']['versions'] as unknown[])
      : [];
  return versions.find((v) => isRecord(v) && v['name'] === 'v1');
}

describe('v1VersionOf', () => {
  it('given every CRD of the shipped Istio bundle, when its v1 version is read, then it equals what parsing the whole document gives', () => {
    for (const doc of documents) assert.deepEqual(v1VersionOf(doc), parsedV1(doc), /^ {2}name: (\S+)$/m.exec(doc)?.[1]);
  });

  it('given a CRD whose versions are written in flow style, when its v1 version is read, then the whole document is parsed to find it', () => {
    const doc =
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  versions: [{name: v1beta1, served: true}, {name: v1, served: true, storage: true}]\n';
    assert.deepEqual(v1VersionOf(doc), { name: 'v1', served: true, storage: true });
  });

  it('given a CRD without a v1 version, when its v1 version is read, then there is none', () => {
    const doc = 'spec:\n  versions:\n  - name: v1alpha1\n    served: true\n';
    assert.equal(v1VersionOf(doc), undefined);
  });
});
