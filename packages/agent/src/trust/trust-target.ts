// What a MeshTrust response asks of the cluster, checked before anything is written.

import { X509Certificate } from 'node:crypto';
import { MeshrelayError, type relay } from '@meshrelay/api';
import { certificateId, checkCacerts, joinPems, type Cacerts, type CacertsFiles } from './cacerts.ts';

/** A checked MeshTrust answer with mesh trust on. */
export interface TrustTarget {
  readonly generation: number;
  readonly phase: number;
  readonly bundlePems: readonly string[];
  /** root-cert.pem as it must read. */
  readonly bundle: string;
  readonly signingRootId: string;
  readonly signingRootPem: string;
  readonly graceRatio: number;
  readonly rsaKeyBits: number;
  readonly orgName: string;
}

function bad(message: string): never {
  throw new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `MeshTrust response: ${message}`);
}

/**
 * Checks an enabled response: every bundle entry a CA certificate, the signing root parsable, named by its id and
 * in the bundle, a grace ratio in (0, 1). Throws MESHRELAY_ERR_CERTIFICATE naming the first problem.
 */
export function checkTarget(res: relay.v1.IMeshTrustResponse): TrustTarget {
  const bundlePems = (res.bundleRootPems ?? []).map((pem) => `${pem.trim()}\n`);
  if (bundlePems.length === 0) bad('the bundle holds no root');
  const ids = bundlePems.map((pem, i) => {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(pem);
    } catch (err) {
      return bad(`bundle root ${i} is not a PEM certificate: ${(err as Error).message}`);
    }
    if (!cert.ca) bad(`bundle root ${i} is not a CA certificate`);
    return certificateId(pem);
  });
  const signingRootPem = `${(res.signingRootPem ?? '').trim()}\n`;
  let signingRootId: string;
  try {
    signingRootId = certificateId(signingRootPem);
  } catch (err) {
    return bad(`the signing root is not a PEM certificate: ${(err as Error).message}`);
  }
  if (res.signingRootId && res.signingRootId !== signingRootId)
    bad(`signing_root_id ${res.signingRootId} does not name the signing root (${signingRootId})`);
  if (!ids.includes(signingRootId)) bad(`the signing root ${signingRootId} is not in the bundle`);
  const graceRatio = res.graceRatio ?? 0;
  if (!(graceRatio > 0 && graceRatio < 1)) bad(`grace_ratio ${graceRatio} is not between 0 and 1`);
  return {
    generation: Number(res.generation ?? 0),
    phase: res.phase ?? 0,
    bundlePems,
    bundle: joinPems(bundlePems),
    signingRootId,
    signingRootPem,
    graceRatio,
    rsaKeyBits: res.rsaKeyBits ?? 0,
    orgName: res.orgName ?? '',
  };
}

/**
 * Why the cluster needs a new intermediate for `target`, or undefined when the one it holds serves: none held,
 * signed by another root, issued for another trust domain, or past the grace point (the last `graceRatio` of its
 * life, as Gloo's secretRotationGracePeriodRatio).
 */
export function renewalReason(
  held: Cacerts | undefined,
  target: TrustTarget,
  trustDomain: string,
  now: number,
): string | undefined {
  if (held === undefined) return 'no intermediate held';
  if (held.signingRootId !== target.signingRootId)
    return `signed by root ${held.signingRootId}, the signing root is now ${target.signingRootId}`;
  const san = new X509Certificate(held.files['ca-cert.pem']).subjectAltName ?? '';
  if (san !== `URI:spiffe://${trustDomain}`) return `issued for ${san || 'no SAN'}, the trust domain is ${trustDomain}`;
  const start = held.notBefore.getTime();
  const end = held.notAfter.getTime();
  if (now >= end - (end - start) * target.graceRatio)
    return `within the last ${Math.round(target.graceRatio * 100)} % of its life (notAfter ${held.notAfter.toISOString()})`;
  return undefined;
}

/**
 * The `cacerts` for a signed intermediate: checked as a whole (key matches, signed by the signing root, root in the
 * bundle, a CA, not expired) and for the SAN spiffe://<trustDomain>. Throws MESHRELAY_ERR_CERTIFICATE.
 */
export function cacertsFor(
  certPem: string,
  keyPem: string,
  target: TrustTarget,
  trustDomain: string,
  now: number,
): Cacerts {
  const cert = `${certPem.trim()}\n`;
  const files: CacertsFiles = {
    'ca-cert.pem': cert,
    'ca-key.pem': keyPem,
    'cert-chain.pem': joinPems([cert, target.signingRootPem]),
    'root-cert.pem': target.bundle,
  };
  const checked = checkCacerts(files, new Date(now));
  const san = new X509Certificate(cert).subjectAltName ?? '';
  if (san !== `URI:spiffe://${trustDomain}`)
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `signed intermediate names ${san || 'no SAN'}, expected URI:spiffe://${trustDomain}`,
    );
  return checked;
}
