/**
 * The `v1` entry of a CRD document's `spec.versions`. Istio's CRDs repeat the same large schema
 * for every served version (v1alpha3, v1beta1, v1), so the `v1` entry is cut out of the text and
 * parsed alone, which is most of the cost saved; when the text does not have the expected layout
 * the whole document is parsed instead. Either way the result is the same value.
 */
import { parse } from 'yaml';
import { isRecord } from '@meshrelay/api';

/** The list items under `  versions:` (two-space list markers), each up to its last indented line. */
function versionItems(doc: string): string[] {
  const at = doc.search(/^ {2}versions:$/m);
  if (at < 0) return [];
  return doc
    .slice(at)
    .split(/^ {2}- /m)
    .slice(1)
    .map((item) => {
      const lines = item.split('\n');
      let end = 1;
      while (end < lines.length && ((lines[end] as string).startsWith('    ') || (lines[end] as string).trim() === ''))
        end++;
      return lines.slice(0, end).join('\n');
    });
}

function isV1(version: unknown): version is Record<string, unknown> {
  return isRecord(version) && version['name'] === 'v1';
}

/** The `v1` version entry of the CRD document `doc`, or undefined when it has none. */
export function v1VersionOf(doc: string): Record<string, unknown> | undefined {
  const item = versionItems(doc).find((text) => /^(?:name: v1$| {4}name: v1$)/m.test(text));
  if (item !== undefined) {
    try {
      const parsed: unknown = parse(`- ${item}`.replace(/\n {2}/g, '\n'));
      if (Array.isArray(parsed) && parsed.length === 1 && isV1(parsed[0])) return parsed[0];
    } catch {
      // Not the layout expected: parse the whole document below.
    }
  }
  const crd: unknown = parse(doc);
  const versions =
    isRecord(crd) && isRecord(crd['spec']) && Array.isArray(crd['spec']['versions'])
      ? (crd['spec']['versions'] as unknown[])
      : [];
  return versions.find(isV1);
}
