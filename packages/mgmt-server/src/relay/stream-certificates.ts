// A relay stream lives no longer than the certificate that opened it: it is closed when that
// certificate expires, or when its cluster is revoked after it was issued. Both close with
// UNAUTHENTICATED, which makes the agent drop its certificate and register again.

import { GRPC_STATUS, type KubernetesCluster } from '@meshrelay/api';
import { isRevoked } from '@meshrelay/registry';
import type { Logger } from 'pino';
import type { ConnectionTracker } from '../connections.ts';

// setTimeout takes at most 2^31-1 ms (24.8 days); longer waits are re-armed.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `onExpired` once `now()` is past `notAfter`; returns a function that cancels it. */
export function watchCertificateExpiry(notAfter: Date, now: () => Date, onExpired: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    const left = notAfter.getTime() - now().getTime();
    if (left < 0) {
      onExpired();
      return;
    }
    // X.509 validity includes notAfter itself: fire just after it.
    timer = setTimeout(arm, Math.min(left + 1, MAX_TIMER_MS));
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/** Closes this replica's streams of `cluster` whose certificate predates its revocation mark. */
export function closeRevokedStreams(connections: ConnectionTracker, cluster: KubernetesCluster, log: Logger): void {
  const name = cluster.metadata.name;
  for (const stream of connections.streams(name)) {
    if (!isRevoked(cluster, stream.certificateNotBefore)) continue;
    log.warn(
      { cluster: name, stream: stream.kind, peer: stream.peer },
      'closing a stream whose client certificate was revoked',
    );
    stream.terminate(
      GRPC_STATUS.UNAUTHENTICATED,
      `MESHRELAY_ERR_CERTIFICATE_REVOKED: cluster "${name}" was revoked at ${cluster.spec.revokeCertificatesBefore}; register again with the new token`,
    );
  }
}
