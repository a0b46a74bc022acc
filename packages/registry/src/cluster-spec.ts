// What a registry record's spec may hold, checked wherever a record enters the registry: a
// state-directory file, a KubernetesCluster CR from the informer (kubectl may write anything the
// CRD schema lets through, or a CRD without the schema), the HTTP API and meshctl. A record that
// fails is refused with the field named and the previous copy kept, so no value that is not a
// DNS name ever reaches a translated output.

import { MeshrelayError, isDnsName } from '@meshrelay/api';

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** The problem with a record's spec, naming the field; undefined when it is acceptable. */
export function clusterSpecProblem(spec: Readonly<Record<string, unknown>>): string | undefined {
  const { skipWarming, revokeCertificatesBefore } = spec;
  if (skipWarming !== undefined && typeof skipWarming !== 'boolean') return 'spec.skipWarming must be a boolean';
  // clusterDomain ends up in VirtualService hosts, trustDomain in AuthorizationPolicy principals.
  for (const field of ['clusterDomain', 'trustDomain'] as const) {
    const value = spec[field];
    if (value !== undefined && (typeof value !== 'string' || !isDnsName(value))) {
      return `spec.${field} must be a DNS name (RFC 1123 subdomain: lowercase letters, digits, "-" and ".", at most 253 characters)`;
    }
  }
  if (
    revokeCertificatesBefore !== undefined &&
    (typeof revokeCertificatesBefore !== 'string' ||
      !RFC3339_UTC.test(revokeCertificatesBefore) ||
      Number.isNaN(Date.parse(revokeCertificatesBefore)))
  ) {
    return 'spec.revokeCertificatesBefore must be an RFC 3339 UTC timestamp (e.g. 2026-11-23T12:00:00Z)';
  }
  return undefined;
}

/** Throws MESHRELAY_ERR_INVALID_ARGUMENT naming the field when a spec to be written is not acceptable. */
export function assertClusterSpec(spec: Readonly<Record<string, unknown>>): void {
  const problem = clusterSpecProblem(spec);
  if (problem) throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', problem);
}
