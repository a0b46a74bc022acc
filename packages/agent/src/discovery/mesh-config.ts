// The cluster's SPIFFE trust domain, read by the kubernetes provider from Istio's mesh config:
// the `mesh` key (MeshConfig as YAML) of the ConfigMap `istio` in the Istio namespace.
//
// What goes into the input snapshot is that trust domain alone, as a mesh config ConfigMap in
// the place translation reads it (`istio` in istio-system, whatever namespace it was read from),
// holding nothing but `trustDomain`. So the snapshot changes when the trust domain does, not on
// every edit of an unrelated mesh setting, and a malformed mesh config can keep the last good
// trust domain in the snapshot while the problem is reported.

import type { KubernetesObject } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import { DNS_SUBDOMAIN, MESH_CONFIG_NAMESPACE, isRecord, type Resource } from '@meshrelay/api';
import type { InputProblem } from './input-problem.ts';

/** The ConfigMap the kubernetes provider reads (Istio's default revision). */
export const MESH_CONFIG_NAME = 'istio';

/** What the mesh config gives the snapshot now. */
export interface MeshConfigReading {
  /**
   * The trust domain in force: the mesh config's, the last good one when it is malformed, else undefined (Istio's
   * default).
   */
  readonly trustDomain: string | undefined;
  /** The mesh config resource for the snapshot, when a trust domain is in force. */
  readonly resource: Resource | undefined;
  readonly problem: InputProblem | undefined;
}

type Parsed = { readonly trustDomain: string | undefined } | { readonly problem: { path: string; message: string } };

/** Reads `data.mesh`: undefined trust domain when the mesh config sets none. */
export function parseMeshTrustDomain(configMap: KubernetesObject): Parsed {
  const data = (configMap as { data?: unknown }).data;
  if (data === undefined || data === null) return { trustDomain: undefined };
  if (!isRecord(data)) return { problem: { path: 'data', message: 'must be a map of strings' } };
  const mesh = data['mesh'];
  if (mesh === undefined) return { trustDomain: undefined };
  if (typeof mesh !== 'string')
    return { problem: { path: 'data.mesh', message: 'must be a string (MeshConfig as YAML)' } };
  const doc = parseDocument(mesh);
  if (doc.errors.length > 0)
    return {
      problem: { path: 'data.mesh', message: `not valid YAML: ${doc.errors[0]?.message.split('\n')[0] ?? ''}` },
    };
  const config: unknown = doc.toJS();
  if (config === null || config === undefined) return { trustDomain: undefined };
  if (!isRecord(config)) return { problem: { path: 'data.mesh', message: 'must be a YAML mapping (MeshConfig)' } };
  const trustDomain = config['trustDomain'];
  if (trustDomain === undefined || trustDomain === null || trustDomain === '') return { trustDomain: undefined };
  if (typeof trustDomain !== 'string' || !DNS_SUBDOMAIN.test(trustDomain)) {
    return {
      problem: { path: 'data.mesh trustDomain', message: `must be a DNS name, not ${JSON.stringify(trustDomain)}` },
    };
  }
  return { trustDomain };
}

/** The snapshot's mesh config resource for a trust domain. */
export function meshConfigResource(trustDomain: string): Resource {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: MESH_CONFIG_NAME, namespace: MESH_CONFIG_NAMESPACE },
    data: { mesh: `trustDomain: ${trustDomain}\n` },
  } as Resource;
}

/** Follows the trust domain across readings, keeping the last good one through a malformed mesh config. */
export class MeshConfigTracker {
  readonly #namespace: string;
  readonly #path: string;
  #lastGood: string | undefined;

  /** `path` is the API path of the ConfigMap, for problems. */
  constructor(namespace: string, path: string) {
    this.#namespace = namespace;
    this.#path = path;
  }

  /** Takes the objects of the Istio namespace's ConfigMap watch; only `istio` is read. */
  read(objects: Iterable<KubernetesObject>): MeshConfigReading {
    let configMap: KubernetesObject | undefined;
    for (const obj of objects) if (obj.metadata?.name === MESH_CONFIG_NAME) configMap = obj;
    if (configMap === undefined) {
      // Deleted (or never there): Istio itself falls back to its default, so does translation.
      this.#lastGood = undefined;
      return { trustDomain: undefined, resource: undefined, problem: undefined };
    }
    const parsed = parseMeshTrustDomain(configMap);
    if ('trustDomain' in parsed) {
      this.#lastGood = parsed.trustDomain;
      return {
        trustDomain: parsed.trustDomain,
        resource: parsed.trustDomain === undefined ? undefined : meshConfigResource(parsed.trustDomain),
        problem: undefined,
      };
    }
    const kept =
      this.#lastGood === undefined
        ? "no trust domain was read before: Istio's default applies"
        : `the last good trust domain ${this.#lastGood} is kept`;
    const problem: InputProblem = {
      file: this.#path,
      document: -1,
      path: parsed.problem.path,
      message: `${parsed.problem.message}; ${kept}`,
      object: { apiVersion: 'v1', kind: 'ConfigMap', namespace: this.#namespace, name: MESH_CONFIG_NAME },
    };
    return {
      trustDomain: this.#lastGood,
      resource: this.#lastGood === undefined ? undefined : meshConfigResource(this.#lastGood),
      problem,
    };
  }
}
