/** Gloo selector semantics: every field given must match; labels are a subset match. */
import type { ObjectSelector, StringMap } from './gloo-types.ts';

export function hasLabels(labels: StringMap | undefined, wanted: StringMap | undefined): boolean {
  if (!wanted) return true;
  for (const [key, value] of Object.entries(wanted)) if (labels?.[key] !== value) return false;
  return true;
}

export interface Selectable {
  readonly name: string;
  readonly namespace: string;
  readonly cluster: string;
  readonly labels: StringMap;
  /** The workspace the object belongs to ('' = the implicit one; undefined = none). */
  readonly workspace?: string;
}

/** True when `object` matches `selector`, including its workspace field (never ignored). */
export function matchesObjectSelector(selector: ObjectSelector | undefined, object: Selectable): boolean {
  if (!selector) return true;
  if (selector.workspace !== undefined && selector.workspace !== '' && selector.workspace !== object.workspace)
    return false;
  if (selector.name !== undefined && selector.name !== '' && selector.name !== object.name) return false;
  if (selector.namespace !== undefined && selector.namespace !== '' && selector.namespace !== object.namespace)
    return false;
  if (selector.cluster !== undefined && selector.cluster !== '' && selector.cluster !== object.cluster) return false;
  return hasLabels(object.labels, selector.labels);
}
