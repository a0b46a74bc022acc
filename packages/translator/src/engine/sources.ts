/**
 * Source ids and the `meshrelay.io/sources` annotation. Every output names the Gloo resources
 * it came from; ids are sorted so equal inputs give equal annotations (and equal hashes).
 */
import { SOURCES_ANNOTATION, canonicalResource, type Resource } from '@meshrelay/api';
import { sameElements } from './same-content.ts';

/** `Kind/namespace/name@cluster` of a Gloo resource found in `cluster`'s input. */
export function sourceId(r: Resource, cluster: string): string {
  return `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}@${cluster}`;
}

/** An output before it is annotated: its owning resource first, then the policies that shaped it. */
export interface Sourced {
  readonly resource: Resource;
  /** sources[0] owns the output: when the output is invalid, that resource fails. */
  readonly sources: readonly string[];
}

export function sourced(resource: Resource, owner: string, ...contributors: (string | undefined)[]): Sourced {
  const rest = contributors.filter((c): c is string => c !== undefined && c !== owner);
  return { resource, sources: [owner, ...new Set(rest)] };
}

/** Whether two candidate lists hold the same outputs with the same sources, in the same order. */
export function sameCandidates(a: readonly Sourced[], b: readonly Sourced[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as Sourced;
    const y = b[i] as Sourced;
    if (x !== y && (x.resource !== y.resource || !sameElements(x.sources, y.sources))) return false;
  }
  return true;
}

/** The annotation value of a sources list (lists are immutable and shared by the outputs of a unit). */
const annotationValues = new WeakMap<readonly string[], string>();

/** Annotated canonical outputs by the output they annotate and the annotation's value. */
const annotated = new WeakMap<Resource, Map<string, Resource>>();

/**
 * The output with its sources annotation, as a deep-frozen canonical resource (the input is
 * not mutated). The same output with the same sources gives the same object, so an output
 * shared by many clusters, or kept from an earlier run, is encoded once.
 */
export function annotate(s: Sourced): Resource {
  let value = annotationValues.get(s.sources);
  if (value === undefined) {
    value = [...new Set(s.sources)].sort().join(',');
    annotationValues.set(s.sources, value);
  }
  let byValue = annotated.get(s.resource);
  if (!byValue) {
    byValue = new Map();
    annotated.set(s.resource, byValue);
  }
  let out = byValue.get(value);
  if (!out) {
    const annotations = { ...(s.resource.metadata.annotations ?? {}), [SOURCES_ANNOTATION]: value };
    out = canonicalResource({ ...s.resource, metadata: { ...s.resource.metadata, annotations } });
    byValue.set(value, out);
  }
  return out;
}
