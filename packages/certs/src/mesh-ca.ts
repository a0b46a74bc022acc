// The mesh root CA and the per-cluster intermediates it signs. The mesh root is separate from the
// relay CA: it anchors workload (Istio / proxyless gRPC) trust, and it can be rotated.

import {
  generateKeyPair as generateKeyPairCallback,
  generateKeyPairSync,
  X509Certificate,
  type RSAKeyPairOptions,
} from 'node:crypto';
import { promisify } from 'node:util';
import forge from 'node-forge';
import { isValidClusterName, MeshrelayError } from '@meshrelay/api';
import type { CaBundle } from './ca.ts';
import { MIN_RSA_BITS, screenCsr } from './csr-screen.ts';
import type { KeyPair } from './keys.ts';
import {
  addSeconds,
  assertIssuerValidAt,
  authorityKeyIdentifierFor,
  buildCertificate,
  CLOCK_SKEW_SECONDS,
  errorMessage,
  lfPem,
  parseCertificate,
  signCertificate,
  uriSan,
  utf8Name,
  type NameAttribute,
} from './x509.ts';

/**
 * The largest mesh CA key: a RootTrustPolicy's rsaKeySizeBytes may ask for up to 8192 bits (the
 * relay's own client keys stop at 4096), and a policy the server accepts must be one it can sign.
 */
export const MAX_INTERMEDIATE_RSA_BITS = 8192;

export interface MeshRootOptions {
  /** Default 'meshrelay mesh root'. */
  readonly commonName?: string;
  readonly orgName?: string;
  /** Default 365. */
  readonly ttlDays?: number;
  /** Default 4096; only used when no keyPair is given. */
  readonly rsaKeyBits?: number;
  readonly now: Date;
  /** An RSA key to certify instead of a fresh one (tests reuse keys to stay quick). */
  readonly keyPair?: KeyPair;
}

export interface IntermediateCsrOptions {
  readonly cluster: string;
  readonly trustDomain: string;
  readonly orgName?: string;
  /** Default 4096. */
  readonly rsaKeyBits?: number;
}

export interface SignIntermediateOptions {
  readonly root: CaBundle;
  readonly csrPem: string;
  /** The cluster the request came from (the server's truth; the CSR's CN must match it). */
  readonly cluster: string;
  readonly trustDomain: string;
  readonly ttlDays: number;
  readonly orgName?: string;
  /**
   * The key size the RootTrustPolicy asks for (intermediateCertOptions.rsaKeySizeBytes, in bits):
   * a CSR with a smaller key is refused. Unset: the relay's floor of 2048 bits.
   */
  readonly minRsaBits?: number;
  readonly now: Date;
}

export interface IssuedIntermediate {
  readonly certPem: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

const DEFAULT_ROOT_NAME = 'meshrelay mesh root';
const DEFAULT_ROOT_TTL_DAYS = 365;
const DEFAULT_RSA_BITS = 4096;
const ROOT_ID_HEX_CHARS = 16;
const PRINTABLE_NAME = /^[\x20-\x7e]{1,64}$/;
export const TRUST_DOMAIN_PATTERN = /^[a-z0-9]([a-z0-9._-]{0,253}[a-z0-9])?$/;
const generateKeyPairAsync = promisify(generateKeyPairCallback);

function invalid(message: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', message);
}

function refuseCsr(reason: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `intermediate CSR refused: ${reason}`);
}

/** The root's id: the first 16 hex characters of the SHA-256 of its DER encoding. */
export function rootIdOf(certPem: string): string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `root certificate is not a readable X.509 certificate: ${errorMessage(err)}`,
      { cause: err },
    );
  }
  return cert.fingerprint256.replaceAll(':', '').toLowerCase().slice(0, ROOT_ID_HEX_CHARS);
}

/**
 * Creates a self-signed mesh root: basicConstraints CA (critical), keyUsage keyCertSign + cRLSign
 * (critical), subjectKeyIdentifier, CN and optional O. Valid from now − 60 s for ttlDays.
 */
export function createMeshRoot(options: MeshRootOptions): CaBundle {
  const commonName = options.commonName ?? DEFAULT_ROOT_NAME;
  const ttlDays = options.ttlDays ?? DEFAULT_ROOT_TTL_DAYS;
  assertName('mesh root commonName', commonName);
  if (options.orgName !== undefined) assertName('mesh root orgName', options.orgName);
  assertPositive('mesh root ttlDays', ttlDays);
  const keyPair = options.keyPair ?? rsaKeyPairSync(options.rsaKeyBits ?? DEFAULT_RSA_BITS);
  const cert = buildCertificate({
    subject: subjectOf(commonName, options.orgName),
    publicKeyPem: keyPair.publicKeyPem,
    notBefore: addSeconds(options.now, -CLOCK_SKEW_SECONDS),
    notAfter: addSeconds(options.now, ttlDays * 86_400),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      { name: 'subjectKeyIdentifier' },
    ],
  });
  return { certPem: lfPem(signCertificate(cert, cert, keyPair.privateKeyPem)), keyPem: keyPair.privateKeyPem };
}

/**
 * Generates the cluster's intermediate key (on the thread pool) and a CSR for it: CN = cluster,
 * O = orgName, requesting only the URI SAN spiffe://<trustDomain>. The key stays with the caller.
 */
export async function createIntermediateCsr(
  options: IntermediateCsrOptions,
): Promise<{ csrPem: string; keyPem: string }> {
  const { cluster, trustDomain, orgName } = options;
  assertCluster(cluster);
  assertTrustDomain(trustDomain);
  if (orgName !== undefined) assertName('intermediate orgName', orgName);
  const bits = assertRsaBits(options.rsaKeyBits ?? DEFAULT_RSA_BITS);
  const { privateKey, publicKey } = await generateKeyPairAsync('rsa', rsaOptions(bits));
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.publicKeyFromPem(publicKey);
  csr.setSubject(utf8Name(subjectOf(cluster, orgName)));
  csr.setAttributes([
    {
      name: 'extensionRequest',
      extensions: [{ name: 'subjectAltName', altNames: [uriSan(`spiffe://${trustDomain}`)] }],
    },
  ]);
  csr.sign(forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return { csrPem: lfPem(forge.pki.certificationRequestToPem(csr)), keyPem: privateKey };
}

/**
 * Signs a cluster's intermediate CSR with the mesh root. Issued: basicConstraints CA pathlen 0
 * (critical), keyUsage keyCertSign + cRLSign (critical), SKI + AKI, SAN URI spiffe://<trustDomain>,
 * CN = cluster, O = orgName; valid from now − 60 s until min(now + ttlDays, the root's notAfter).
 * Throws MESHRELAY_ERR_CERTIFICATE naming the problem for a CSR whose signature does not verify,
 * whose key is not RSA 2048–4096, whose CN is not the cluster, whose SAN is not exactly one URI
 * spiffe://<trustDomain>, or which requests any other extension.
 */
export function signIntermediateCsr(options: SignIntermediateOptions): IssuedIntermediate {
  const { root, cluster, trustDomain, ttlDays, now } = options;
  assertCluster(cluster);
  assertTrustDomain(trustDomain);
  assertPositive('intermediate ttlDays', ttlDays);
  if (options.orgName !== undefined) assertName('intermediate orgName', options.orgName);
  const csr = readIntermediateCsr(options.csrPem, cluster, trustDomain, options.minRsaBits);
  const rootCert = parseCertificate(root.certPem, 'mesh root certificate');
  assertIssuerValidAt(rootCert, now);
  const requested = addSeconds(now, ttlDays * 86_400);
  const notAfter = requested < rootCert.validity.notAfter ? requested : rootCert.validity.notAfter;
  const notBefore = addSeconds(now, -CLOCK_SKEW_SECONDS);
  const cert = buildCertificate({
    subject: subjectOf(cluster, options.orgName),
    publicKeyPem: forge.pki.publicKeyToPem(csr.publicKey!),
    notBefore,
    notAfter,
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      { name: 'subjectAltName', altNames: [uriSan(`spiffe://${trustDomain}`)] },
      { name: 'subjectKeyIdentifier' },
      authorityKeyIdentifierFor(rootCert),
    ],
  });
  return { certPem: lfPem(signCertificate(cert, rootCert, root.keyPem)), notBefore, notAfter };
}

interface RequestedExtension {
  readonly id?: string;
  readonly name?: string;
  readonly altNames?: readonly { readonly type: number; readonly value?: unknown }[];
}

/** Screens the CSR (key, signature) with node:crypto, then checks what it asks for. */
function readIntermediateCsr(
  csrPem: string,
  cluster: string,
  trustDomain: string,
  minRsaBits = MIN_RSA_BITS,
): forge.pki.CertificateSigningRequest {
  // Up to 8192 bits, as a RootTrustPolicy may ask (the relay's own client keys stop at 4096).
  screenCsr(csrPem, { min: Math.max(MIN_RSA_BITS, minRsaBits), max: MAX_INTERMEDIATE_RSA_BITS });
  let csr: forge.pki.CertificateSigningRequest;
  try {
    csr = forge.pki.certificationRequestFromPem(csrPem);
  } catch (err) {
    throw refuseCsr(`not a readable RSA PKCS#10 request (${errorMessage(err)})`);
  }
  const cn: unknown = csr.subject.getField('CN')?.value;
  if (cn !== cluster) {
    throw refuseCsr(`common name ${JSON.stringify(cn ?? null)} is not the cluster ${JSON.stringify(cluster)}`);
  }
  const requested =
    (csr.getAttribute({ name: 'extensionRequest' }) as { extensions?: RequestedExtension[] } | null)?.extensions ?? [];
  const extra = requested.filter((e) => e.name !== 'subjectAltName').map((e) => e.name ?? e.id ?? 'unknown');
  if (extra.length > 0) throw refuseCsr(`requests extensions it cannot be given: ${extra.join(', ')}`);
  const expected = `spiffe://${trustDomain}`;
  const names = requested.flatMap((e) => e.altNames ?? []);
  const sanOk = names.length === 1 && names[0]!.type === 6 && names[0]!.value === expected;
  if (!sanOk) {
    const shown = names.map((n) => `${n.type === 6 ? 'URI' : `type ${n.type}`}:${String(n.value)}`).join(', ');
    throw refuseCsr(`subject alternative names must be exactly URI ${expected}, got [${shown}]`);
  }
  return csr;
}

function subjectOf(commonName: string, orgName: string | undefined): NameAttribute[] {
  const subject: NameAttribute[] = [{ name: 'commonName', value: commonName }];
  if (orgName !== undefined) subject.push({ name: 'organizationName', value: orgName });
  return subject;
}

function rsaOptions(bits: number): RSAKeyPairOptions<'pem', 'pem'> {
  return {
    modulusLength: bits,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  };
}

function rsaKeyPairSync(bits: number): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', rsaOptions(assertRsaBits(bits)));
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

function assertRsaBits(bits: number): number {
  if (!Number.isInteger(bits) || bits < MIN_RSA_BITS || bits > MAX_INTERMEDIATE_RSA_BITS) {
    throw invalid(`rsaKeyBits must be an integer from ${MIN_RSA_BITS} to ${MAX_INTERMEDIATE_RSA_BITS}, got ${bits}`);
  }
  return bits;
}

function assertName(what: string, value: string): void {
  if (!PRINTABLE_NAME.test(value)) {
    throw invalid(`${what} must be 1-64 printable ASCII characters, got ${JSON.stringify(value)}`);
  }
}

function assertPositive(what: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) throw invalid(`${what} must be a positive number, got ${value}`);
}

function assertCluster(cluster: string): void {
  if (!isValidClusterName(cluster)) throw invalid(`cluster name ${JSON.stringify(cluster)} is not a DNS-1123 label`);
}

export function assertTrustDomain(trustDomain: string): void {
  if (!TRUST_DOMAIN_PATTERN.test(trustDomain)) {
    throw invalid(
      `trust domain ${JSON.stringify(trustDomain)} must be lowercase letters, digits, '.', '-' or '_' (at most 255)`,
    );
  }
}
