/** Admission of input resources into a translation (see admit). */
import { KINDS, findInputKind, formatResourceKey, isKind, isMeshConfigMap, isRecord, resourceKey, type Resource } from '@meshrelay/api';
import { isGlooResource, unimplementedFieldsOf, validateInputResource } from './input-validation.ts';
import type { ProblemSink } from './problems.ts';
import type { StatusBook } from './status-book.ts';
import type { TranslationInput } from './types.ts';

/** Whether a resource asks for serviceIsolation (read leniently: it may be invalid). */
function asksIsolation(r: Resource): boolean {
  const options = isRecord(r.spec) ? r.spec['options'] : undefined;
  return isRecord(options) && options['serviceIsolation'] !== undefined;
}

/** Resources that fail closed: every AccessPolicy, and WorkspaceSettings that ask for serviceIsolation. */
function isSecurityRelevant(r: Resource): boolean {
  return isKind(r, KINDS.AccessPolicy) || (isKind(r, KINDS.WorkspaceSettings) && asksIsolation(r));
}

export interface Admission {
  readonly perCluster: Map<string, Resource[]>;
  /** Every security-relevant resource found (valid or not) by source id: these fail closed. */
  readonly security: Map<string, { readonly cluster: string; readonly resource: Resource }>;
}

/**
 * Registers every Gloo resource (any `*.solo.io` group gets a status, whatever its kind) and
 * drops input resources that fail validation (INVALID, with the fields named), so one bad
 * resource does not stop the rest. A valid resource that sets a field Meshrelay does not
 * implement is WARNING naming the field and translated without it, unless ignoring the field
 * would weaken security: then it is INVALID and not translated (so it fails closed).
 */
export function admit(input: TranslationInput, clusterNames: readonly string[], book: StatusBook, problems: ProblemSink): Admission {
  const perCluster = new Map<string, Resource[]>();
  const security = new Map<string, { cluster: string; resource: Resource }>();
  for (const cluster of clusterNames) {
    const valid: Resource[] = [];
    for (const r of input.inputs.get(cluster)?.resources ?? []) {
      if (isGlooResource(r)) {
        const id = book.register(cluster, r);
        if (isSecurityRelevant(r)) security.set(id, { cluster, resource: r });
      }
      // Kubernetes objects that are not inputs (a Namespace, a ConfigMap) are not problems.
      if (!isGlooResource(r) && (!findInputKind(r.apiVersion, r.kind) || (isKind(r, KINDS.ConfigMap) && !isMeshConfigMap(r)))) continue;
      const resource = formatResourceKey(resourceKey(r));
      const issues = validateInputResource(r);
      if (issues.length > 0) {
        const detail = issues.map((p) => `${p.path}: ${p.message}`).join('; ');
        problems.add({ cluster, resource, reason: `invalid input resource ignored: ${detail}`, approval: 'INVALID' });
        continue;
      }
      const unimplemented = unimplementedFieldsOf(r);
      for (const f of unimplemented) {
        if (f.effect === 'WARNING') problems.add({ cluster, resource, reason: `${f.path} is not supported by Meshrelay; ignored` });
        else problems.add({ cluster, resource, reason: `${f.path} is not supported by Meshrelay and ignoring it would weaken security; not translated`, approval: 'INVALID' });
      }
      if (unimplemented.every((f) => f.effect === 'WARNING')) valid.push(r);
    }
    perCluster.set(cluster, valid);
  }
  return { perCluster, security };
}

