/** Admission of input resources into a translation (see admit). */
import {
  KINDS,
  findInputKind,
  formatResourceKey,
  isCanonicalResource,
  isKind,
  isMeshConfigMap,
  isRecord,
  resourceKey,
  type Resource,
} from '@meshrelay/api';
import { isGlooResource, unimplementedFieldsOf, validateInputResource } from './input-validation.ts';
import type { InputProblem } from './schema-errors.ts';
import { addressAnnotationProblems } from '../istio/policy-vips.ts';
import type { ProblemSink } from '../engine/problems.ts';
import type { StatusBook } from '../engine/status-book.ts';

/** Whether a resource asks for serviceIsolation (read leniently: it may be invalid). */
function asksIsolation(r: Resource): boolean {
  const options = isRecord(r.spec) ? r.spec['options'] : undefined;
  return isRecord(options) && options['serviceIsolation'] !== undefined;
}

/** Resources that fail closed: every AccessPolicy, and WorkspaceSettings that ask for serviceIsolation. */
function isSecurityRelevant(r: Resource): boolean {
  return isKind(r, KINDS.AccessPolicy) || (isKind(r, KINDS.WorkspaceSettings) && asksIsolation(r));
}

interface Verdict {
  readonly issues: ReturnType<typeof validateInputResource>;
  readonly unimplemented: ReturnType<typeof unimplementedFieldsOf>;
  /** Meshrelay annotations with a value that means nothing (see addressAnnotationProblems). */
  readonly annotations: readonly InputProblem[];
}

/** The verdict on every valid resource that sets no unimplemented field (shared: most are). */
const CLEAN: Verdict = Object.freeze({
  issues: Object.freeze([]) as unknown as Verdict['issues'],
  unimplemented: Object.freeze([]) as unknown as Verdict['unimplemented'],
  annotations: Object.freeze([]),
});

/** `judged`: validateInputResource is known to find no problem with `r` (see InputJudgements). */
function verdictOf(r: Resource, isGloo: boolean, judged: boolean): Verdict {
  const issues = judged ? [] : validateInputResource(r);
  // Only Gloo kinds have fields Meshrelay does not implement.
  const unimplemented = issues.length > 0 || !isGloo ? [] : unimplementedFieldsOf(r);
  const annotations = issues.length > 0 || !isKind(r, KINDS.VirtualDestination) ? [] : addressAnnotationProblems(r);
  return issues.length === 0 && unimplemented.length === 0 && annotations.length === 0
    ? CLEAN
    : { issues, unimplemented, annotations };
}

/** Resources validated between two yields (a driver may hand the event loop back there). */
const ADMIT_SLICE = 256;

/** What one cluster's input contributes to a translation: a pure function of the input's resources. */
export interface AdmittedCluster {
  /** Every Gloo resource of the input (valid or not): each gets a status. */
  readonly gloo: readonly Resource[];
  /** The input resources admitted into translation. */
  readonly valid: readonly Resource[];
  /** The Gloo resources among `valid`. */
  readonly validGloo: readonly Resource[];
  /** The resources among `valid` with nothing to report (see `before` of admitCluster). */
  readonly clean: readonly Resource[];
}

/**
 * Admits one cluster's input resources: drops those that fail validation (INVALID, with the
 * fields named), so one bad resource does not stop the rest. A valid resource that sets a field
 * Meshrelay does not implement is WARNING naming the field and translated without it, unless
 * ignoring the field would weaken security: then it is INVALID and not translated (so it fails
 * closed). A VirtualDestination whose address annotation is neither "true" nor "false" is WARNING
 * naming it, translated without those addresses. Depends on nothing but `resources`: a result may
 * be reused for an equal input. A list `judgedClean` (intake found every resource valid, see
 * InputJudgements) is not validated again, only read for unimplemented fields and address
 * annotations. `before`, the cluster's previous admission, only spares validating again the
 * canonical resources it found clean (a delta keeps the objects of unchanged resources). Yields
 * between slices of resources.
 */
export function* admitCluster(
  cluster: string,
  resources: readonly Resource[],
  problems: ProblemSink,
  judgedClean: boolean,
  before?: AdmittedCluster,
): Generator<void, AdmittedCluster> {
  const gloo: Resource[] = [];
  const valid: Resource[] = [];
  const validGloo: Resource[] = [];
  const clean: Resource[] = [];
  // A canonical resource (deep-frozen: it cannot have changed) found clean in the cluster's input before is clean now.
  const judged = judgedClean;
  const reusable = !judged && before && before.clean.length > 0 ? new Set(before.clean) : undefined;
  for (const [i, r] of resources.entries()) {
    if (i % ADMIT_SLICE === ADMIT_SLICE - 1) yield;
    const isGloo = isGlooResource(r);
    if (isGloo) gloo.push(r);
    // Kubernetes objects that are not inputs (a Namespace, a ConfigMap) are not problems.
    if (!isGloo && (!findInputKind(r.apiVersion, r.kind) || (isKind(r, KINDS.ConfigMap) && !isMeshConfigMap(r))))
      continue;
    const verdict = reusable?.has(r) === true && isCanonicalResource(r) ? CLEAN : verdictOf(r, isGloo, judged);
    if (verdict === CLEAN) {
      valid.push(r);
      clean.push(r);
      if (isGloo) validGloo.push(r);
      continue;
    }
    const { issues, unimplemented, annotations } = verdict;
    // Only a resource with something to report needs its key (most have none).
    const resource = formatResourceKey(resourceKey(r));
    if (issues.length > 0) {
      const detail = issues.map((p) => `${p.path}: ${p.message}`).join('; ');
      problems.add({ cluster, resource, reason: `invalid input resource ignored: ${detail}`, approval: 'INVALID' });
      continue;
    }
    // The destination is translated as if the annotation were absent: its default address is unaffected.
    for (const a of annotations) problems.add({ cluster, resource, reason: `${a.path} ${a.message}` });
    for (const f of unimplemented) {
      if (f.effect === 'WARNING')
        problems.add({ cluster, resource, reason: `${f.path} is not supported by Meshrelay; ignored` });
      else
        problems.add({
          cluster,
          resource,
          reason: `${f.path} is not supported by Meshrelay and ignoring it would weaken security; not translated`,
          approval: 'INVALID',
        });
    }
    if (unimplemented.every((f) => f.effect === 'WARNING')) {
      valid.push(r);
      if (isGloo) validGloo.push(r);
    }
  }
  return { gloo, valid, validGloo, clean };
}

/** A security-relevant resource found in an input (valid or not): it fails closed. */
export interface SecurityResource {
  readonly cluster: string;
  readonly resource: Resource;
}

/**
 * Registers every Gloo resource of an admitted cluster (any `*.solo.io` group gets a status,
 * whatever its kind) and records the security-relevant ones by source id.
 */
export function registerGloo(
  cluster: string,
  admitted: AdmittedCluster,
  book: StatusBook,
  security: Map<string, SecurityResource>,
): void {
  for (const r of admitted.gloo) {
    const id = book.register(cluster, r);
    if (isSecurityRelevant(r)) security.set(id, { cluster, resource: r });
  }
}
