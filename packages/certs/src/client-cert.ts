import { createPublicKey } from 'node:crypto';
import forge from 'node-forge';
import { clusterSpiffeId, isValidClusterName, MeshrelayError } from '@meshrelay/api';
import type { CaBundle } from './ca.ts';
import { screenCsr } from './csr-screen.ts';
import {
  addSeconds,
  assertIssuerValidAt,
  authorityKeyIdentifierFor,
  buildCertificate,
  CLOCK_SKEW_SECONDS,
  errorMessage,
  parseCertificate,
  signCertificate,
  uriSan,
  utf8Name,
} from './x509.ts';

export interface CsrOptions {
  readonly privateKeyPem: string;
  readonly publicKeyPem: string;
  readonly cluster: string;
}

export interface ClientCertificateOptions {
  readonly cluster: string;
  /** SPIFFE trust domain of the relay, e.g. `meshrelay.local`. */
  readonly trustDomain: string;
  /** The cluster's registration uid; a re-registered cluster gets a new one, so old certificates stop matching. */
  readonly uid: string;
  readonly lifetimeSeconds: number;
  readonly now: Date;
  /**
   * The earliest notBefore allowed (a cluster's revocation mark): certificates issued after a
   * revocation must not look as if they were issued before it.
   */
  readonly notBeforeAtLeast?: Date;
}

export interface IssuedClientCertificate {
  readonly certPem: string;
  readonly notAfter: Date;
  /** Lowercase hex. */
  readonly serial: string;
}

const UID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
const TRUST_DOMAIN_PATTERN = /^[a-z0-9._-]{1,255}$/;

/** Builds a PKCS#10 CSR with CN = cluster, signed by the agent's own key (which never leaves it). */
export function createCsr(options: CsrOptions): string {
  const { privateKeyPem, publicKeyPem, cluster } = options;
  assertClusterName(cluster);
  const derived = createPublicKey(privateKeyPem).export({ type: 'spki', format: 'der' });
  if (!derived.equals(createPublicKey(publicKeyPem).export({ type: 'spki', format: 'der' }))) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      'the public key given for the CSR does not belong to the private key',
    );
  }
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  csr.setSubject(utf8Name([{ name: 'commonName', value: cluster }]));
  csr.sign(forge.pki.privateKeyFromPem(privateKeyPem) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return forge.pki.certificationRequestToPem(csr);
}

/**
 * Signs an agent's CSR into a client certificate for `cluster`: CN = cluster, OU = uid,
 * URI SAN spiffe://<trustDomain>/cluster/<cluster>, extKeyUsage clientAuth, random serial,
 * valid from now − 60 s for lifetimeSeconds (never past the CA's own expiry).
 * Refuses (MESHRELAY_ERR_CERTIFICATE) a CSR that is unreadable, not self-consistent, uses an RSA
 * key outside 2048–4096 bits or an exponent other than 65537, or names another cluster: the CSR is the caller's claim,
 * the
 * registration is the server's truth.
 */
export function signClientCsr(
  ca: CaBundle,
  csrPem: string,
  options: ClientCertificateOptions,
): IssuedClientCertificate {
  const { cluster, trustDomain, uid, lifetimeSeconds, now } = options;
  assertClusterName(cluster);
  assertIssueOptions(trustDomain, uid, lifetimeSeconds);
  const csr = parseCsr(csrPem);
  const csrCn: unknown = csr.subject.getField('CN')?.value;
  if (csrCn !== cluster) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `CSR common name ${JSON.stringify(csrCn ?? null)} does not match the registered cluster ${JSON.stringify(cluster)}`,
    );
  }
  const caCert = parseCertificate(ca.certPem, 'CA certificate');
  assertIssuerValidAt(caCert, now);
  const requested = addSeconds(now, lifetimeSeconds);
  const notAfter = requested < caCert.validity.notAfter ? requested : caCert.validity.notAfter;
  const cert = buildCertificate({
    subject: [
      { name: 'commonName', value: cluster },
      { name: 'organizationalUnitName', value: uid },
    ],
    publicKeyPem: forge.pki.publicKeyToPem(csr.publicKey!),
    notBefore: latest(addSeconds(now, -CLOCK_SKEW_SECONDS), options.notBeforeAtLeast),
    notAfter,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
      { name: 'subjectAltName', altNames: [uriSan(clusterSpiffeId(trustDomain, cluster))] },
      { name: 'subjectKeyIdentifier' },
      authorityKeyIdentifierFor(caCert),
    ],
  });
  const certPem = signCertificate(cert, caCert, ca.keyPem);
  return { certPem, notAfter, serial: cert.serialNumber };
}

function latest(a: Date, b: Date | undefined): Date {
  return b !== undefined && b > a ? b : a;
}

/** The CSR, after screenCsr checked its key and signature with node:crypto (see csr-screen.ts). */
function parseCsr(csrPem: string): forge.pki.CertificateSigningRequest {
  screenCsr(csrPem);
  try {
    return forge.pki.certificationRequestFromPem(csrPem);
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `CSR is not a readable RSA PKCS#10 request: ${errorMessage(err)}`,
      { cause: err },
    );
  }
}

function assertClusterName(cluster: string): void {
  if (!isValidClusterName(cluster)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `cluster name ${JSON.stringify(cluster)} is not a DNS-1123 label`,
    );
  }
}

function assertIssueOptions(trustDomain: string, uid: string, lifetimeSeconds: number): void {
  if (!TRUST_DOMAIN_PATTERN.test(trustDomain)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `trust domain ${JSON.stringify(trustDomain)} must be lowercase letters, digits, '.', '-' or '_'`,
    );
  }
  if (!UID_PATTERN.test(uid)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `cluster uid ${JSON.stringify(uid)} must be 1-128 characters of [A-Za-z0-9._:-]`,
    );
  }
  if (!Number.isInteger(lifetimeSeconds) || lifetimeSeconds <= 0) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `certificate lifetimeSeconds must be a positive integer, got ${lifetimeSeconds}`,
    );
  }
}
