// The checks a MeshTrust request passes before anything is signed or recorded: every problem is
// an INVALID_ARGUMENT naming the field, so a buggy or hostile agent cannot store junk in the
// plane-wide records others read.

import { DNS_NAME_MAX_LENGTH, DNS_NAME_PATTERN, MeshrelayError, type relay } from '@meshrelay/api';
import type { WorkloadCert } from './trust-records.ts';

export interface CheckedMeshTrustRequest {
  readonly csrPem: string;
  readonly trustDomain: string;
  readonly appliedGeneration: number;
  readonly intermediateRootId: string;
  readonly intermediateNotAfterMs: number;
  readonly oldRootLeafNotAfterMs: number;
  readonly workloads: readonly WorkloadCert[];
  readonly workloadsNotListed: number;
}

/** The most workload certificates one report lists (the agent counts the rest). */
export const MAX_LISTED_WORKLOADS = 200;
const MAX_CSR_BYTES = 16 * 1024;
const MAX_SPIFFE_ID = 512;
const TRUST_DOMAIN = new RegExp(DNS_NAME_PATTERN);
const ROOT_ID = /^([0-9a-f]{16})?$/;

function invalid(message: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `MeshTrust request: ${message}`);
}

function wholeMs(value: unknown, field: string): number {
  const n = Number(value ?? 0);
  if (!Number.isSafeInteger(n) || n < 0)
    throw invalid(`${field} must be a time in ms since 1970, not ${String(value)}`);
  return n;
}

export function checkMeshTrustRequest(request: relay.v1.IMeshTrustRequest): CheckedMeshTrustRequest {
  const csrPem = request.intermediateCsrPem ?? '';
  const trustDomain = request.trustDomain ?? '';
  if (csrPem.length > MAX_CSR_BYTES) throw invalid(`intermediate_csr_pem is larger than ${MAX_CSR_BYTES} bytes`);
  // Required with a CSR (it is the intermediate's SAN); a report without one may leave it out.
  const domainOk = trustDomain.length <= DNS_NAME_MAX_LENGTH && TRUST_DOMAIN.test(trustDomain);
  if (csrPem !== '' ? !domainOk : trustDomain !== '' && !domainOk) {
    throw invalid(
      `trust_domain must be a DNS name such as cluster.local, not ${JSON.stringify(trustDomain.slice(0, 64))}`,
    );
  }
  const intermediateRootId = request.intermediateRootId ?? '';
  if (!ROOT_ID.test(intermediateRootId))
    throw invalid('intermediate_root_id must be 16 lower-case hex digits or empty');
  const workloads = request.workloads ?? [];
  if (workloads.length > MAX_LISTED_WORKLOADS)
    throw invalid(`workloads lists ${workloads.length} certificates; at most ${MAX_LISTED_WORKLOADS} (count the rest)`);
  return {
    csrPem,
    trustDomain,
    appliedGeneration: wholeMs(request.appliedGeneration, 'applied_generation'),
    intermediateRootId,
    intermediateNotAfterMs: wholeMs(request.intermediateNotAfterUnixMs, 'intermediate_not_after_unix_ms'),
    oldRootLeafNotAfterMs: wholeMs(request.oldRootLeafNotAfterUnixMs, 'old_root_leaf_not_after_unix_ms'),
    workloads: workloads.map((w, i) => {
      const spiffeId = w.spiffeId ?? '';
      if (!spiffeId.startsWith('spiffe://') || spiffeId.length > MAX_SPIFFE_ID)
        throw invalid(`workloads[${i}].spiffe_id must be a spiffe:// URI of at most ${MAX_SPIFFE_ID} characters`);
      return { spiffeId, notAfterMs: wholeMs(w.notAfterUnixMs, `workloads[${i}].not_after_unix_ms`) };
    }),
    workloadsNotListed: Number(request.workloadsNotListed ?? 0),
  };
}
