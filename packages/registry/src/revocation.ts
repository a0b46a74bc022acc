// Revocation of a cluster's client certificates (DESIGN §11): the registry record carries a
// mark, spec.revokeCertificatesBefore; every replica refuses certificates of that cluster whose
// notBefore is earlier, and certificates issued afterwards start no earlier than the mark. The
// mark is a whole second because X.509 validity has whole seconds: every certificate issued
// before the revocation has a notBefore at least 60 s (the clock-skew allowance) before it.

import type { KubernetesCluster } from '@meshrelay/api';

/** The mark recorded for a revocation at `now`: now, truncated to the second. */
export function revocationMark(now: Date): Date {
  return new Date(Math.floor(now.getTime() / 1000) * 1000);
}

/** The mark as stored in spec.revokeCertificatesBefore (RFC 3339, UTC, no fraction). */
export function formatRevocationMark(mark: Date): string {
  return mark.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The cluster's revocation mark, if it was ever revoked. */
export function revokedBefore(cluster: KubernetesCluster): Date | undefined {
  const mark = cluster.spec.revokeCertificatesBefore;
  return mark === undefined ? undefined : new Date(mark);
}

/** True when a certificate of the cluster with this notBefore was issued before its revocation. */
export function isRevoked(cluster: KubernetesCluster, notBefore: Date): boolean {
  const mark = revokedBefore(cluster);
  return mark !== undefined && notBefore.getTime() < mark.getTime();
}
