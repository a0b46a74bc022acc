import { X509Certificate } from 'node:crypto';
import { isValidClusterName, MeshrelayError } from '@meshrelay/api';
import type { CaBundle } from './ca.ts';
import {
  errorMessage,
  OID_CLIENT_AUTH,
  parseCertificate,
  subjectField,
  uriSans,
  type ForgeCertificate,
} from './x509.ts';

/** Who a verified client certificate speaks for. */
export interface ClientIdentity {
  readonly cluster: string;
  /** The registration uid the certificate was issued under (its OU). */
  readonly uid: string;
  readonly spiffeId: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** Lowercase hex. */
  readonly serial: string;
}

export interface CertificateInfo {
  readonly subjectCN: string | undefined;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** Lowercase hex. */
  readonly serial: string;
  readonly uris: string[];
}

const SPIFFE_CLUSTER_URI = /^spiffe:\/\/([a-z0-9._-]+)\/cluster\/([^/]+)$/;

/**
 * Authenticates a relay client certificate (PEM, or the DER a TLS stack reports for the peer):
 * issued and signed by `ca`, valid at `now`, not a CA, extKeyUsage clientAuth, with CN = cluster,
 * an OU (the registration uid) and exactly one SPIFFE URI SAN spiffe://<domain>/cluster/<CN>.
 * Whether the uid is still the cluster's current registration is the caller's check.
 * Throws MESHRELAY_ERR_UNAUTHENTICATED with the reason otherwise.
 */
export function verifyClientCertificate(certPemOrDer: string | Buffer, ca: CaBundle, now: Date): ClientIdentity {
  const cert = readX509(certPemOrDer);
  const caCert = readCaX509(ca);
  if (!cert.checkIssued(caCert) || !cert.verify(caCert.publicKey)) refuse('it was not issued by the relay CA');
  if (cert.ca) refuse('it is a CA certificate, not a client certificate');
  if (now < cert.validFromDate) refuse(`it is not valid before ${cert.validFromDate.toISOString()}`);
  if (now > cert.validToDate) refuse(`it expired at ${cert.validToDate.toISOString()}`);
  if (!(cert.keyUsage ?? []).includes(OID_CLIENT_AUTH)) refuse('it lacks extKeyUsage clientAuth');
  return identityOf(parseCertificate(cert.toString(), 'client certificate'), cert.validFromDate, cert.validToDate);
}

/** Reads the fields needed to decide when to renew; throws MESHRELAY_ERR_CERTIFICATE on a malformed PEM. */
export function certificateInfo(certPem: string): CertificateInfo {
  const cert = parseCertificate(certPem, 'certificate');
  return {
    subjectCN: subjectField(cert, 'commonName'),
    notBefore: cert.validity.notBefore,
    notAfter: cert.validity.notAfter,
    serial: cert.serialNumber,
    uris: uriSans(cert),
  };
}

function identityOf(cert: ForgeCertificate, notBefore: Date, notAfter: Date): ClientIdentity {
  const cluster = subjectField(cert, 'commonName');
  if (cluster === undefined || !isValidClusterName(cluster))
    refuse(`its common name ${JSON.stringify(cluster ?? null)} is not a cluster name`);
  const uid = subjectField(cert, 'organizationalUnitName');
  if (uid === undefined || uid === '') refuse('it carries no registration uid (OU)');
  const spiffeIds = uriSans(cert).filter((u) => u.startsWith('spiffe://'));
  if (spiffeIds.length !== 1) refuse(`it carries ${spiffeIds.length} SPIFFE URI SANs, expected exactly one`);
  const spiffeId = spiffeIds[0]!;
  if (SPIFFE_CLUSTER_URI.exec(spiffeId)?.[2] !== cluster)
    refuse(`its SPIFFE ID ${spiffeId} does not name cluster ${cluster}`);
  return { cluster, uid, spiffeId, notBefore, notAfter, serial: cert.serialNumber };
}

function readX509(certPemOrDer: string | Buffer): X509Certificate {
  try {
    return new X509Certificate(certPemOrDer);
  } catch (err) {
    return refuse(`it is not a readable X.509 certificate (${errorMessage(err)})`, err);
  }
}

function readCaX509(ca: CaBundle): X509Certificate {
  try {
    return new X509Certificate(ca.certPem);
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `relay CA certificate is not readable: ${errorMessage(err)}`,
      { cause: err },
    );
  }
}

function refuse(reason: string, cause?: unknown): never {
  throw new MeshrelayError('MESHRELAY_ERR_UNAUTHENTICATED', `client certificate refused: ${reason}`, { cause });
}
