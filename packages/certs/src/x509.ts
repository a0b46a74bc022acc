/**
 * Small wrappers around node-forge's X.509 model shared by the CA, the CSR signer and the
 * certificate readers. Forge only knows RSA, which is all Meshrelay issues.
 */
import { createPublicKey, randomBytes, sign } from 'node:crypto';
import forge from 'node-forge';
import { MeshrelayError } from '@meshrelay/api';

export type ForgeCertificate = forge.pki.Certificate;

/** Certificates start this long before `now`, so a peer whose clock is a little behind accepts them. */
export const CLOCK_SKEW_SECONDS = 60;

export const OID_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const SAN_URI = 6;
const SAN_DNS = 2;
const SAN_IP = 7;

/** A DN attribute written as UTF8String (forge defaults to PrintableString). */
export interface NameAttribute {
  readonly name: 'commonName' | 'organizationName' | 'organizationalUnitName';
  readonly value: string;
}

export interface CertificateTemplate {
  readonly subject: readonly NameAttribute[];
  readonly publicKeyPem: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly extensions: readonly object[];
}

/** A random positive 16-byte serial as lowercase hex (RFC 5280 §4.1.2.2: positive, at most 20 bytes). */
export function randomSerialHex(): string {
  const bytes = randomBytes(16);
  // Clear the sign bit and keep the first byte non-zero so the DER INTEGER is positive and minimal.
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}

export function addSeconds(date: Date, seconds: number): Date {
  return new Date(date.getTime() + seconds * 1000);
}

/** Builds an unsigned certificate; the caller sets the issuer and signs it with signCertificate. */
export function buildCertificate(template: CertificateTemplate): ForgeCertificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(template.publicKeyPem);
  cert.serialNumber = randomSerialHex();
  cert.validity.notBefore = template.notBefore;
  cert.validity.notAfter = template.notAfter;
  cert.setSubject(utf8Name(template.subject));
  cert.setExtensions([...template.extensions]);
  return cert;
}

/** A distinguished name encoded as UTF8String. */
export function utf8Name(attributes: readonly NameAttribute[]): forge.pki.CertificateField[] {
  const fields = attributes.map((a) => ({ name: a.name, value: a.value, valueTagClass: forge.asn1.Type.UTF8 }));
  // @types/node-forge types valueTagClass as an asn1.Class; forge reads it as an asn1.Type.
  return fields as unknown as forge.pki.CertificateField[];
}

/** Sets the issuer name and signs with SHA-256; returns the PEM. */
export function signCertificate(cert: ForgeCertificate, issuer: ForgeCertificate, issuerKeyPem: string): string {
  cert.setIssuer(issuer.subject.attributes);
  cert.sign(forge.pki.privateKeyFromPem(issuerKeyPem) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

/**
 * Signs a certificate for a subject key of any type node:crypto reads (EC included, which forge
 * cannot model): forge lays out the TBSCertificate around a placeholder key, the real
 * SubjectPublicKeyInfo is put in its place, and node:crypto signs with the issuer's RSA key
 * (SHA-256). `template.extensions` must not contain a computed subjectKeyIdentifier: forge would
 * derive it from the placeholder.
 */
export function signCertificateForAnyKey(
  template: CertificateTemplate,
  issuer: ForgeCertificate,
  issuerKeyPem: string,
): string {
  const spkiDer = createPublicKey(template.publicKeyPem).export({ type: 'spki', format: 'der' });
  const cert = buildCertificate({ ...template, publicKeyPem: forge.pki.publicKeyToPem(issuer.publicKey) });
  cert.setIssuer(issuer.subject.attributes);
  const sha256WithRsa = forge.pki.oids['sha256WithRSAEncryption']!;
  cert.siginfo.algorithmOid = sha256WithRsa;
  cert.signatureOid = sha256WithRsa;
  // getTBSCertificate is public in forge but missing from @types/node-forge.
  const { getTBSCertificate } = forge.pki as unknown as { getTBSCertificate(c: ForgeCertificate): forge.asn1.Asn1 };
  const tbs = getTBSCertificate(cert);
  // TBSCertificate: [0] version, serial, signature, issuer, validity, subject, subjectPublicKeyInfo, [3] extensions.
  const fields = tbs.value as forge.asn1.Asn1[];
  fields[6] = forge.asn1.fromDer(forge.util.createBuffer(spkiDer.toString('binary')));
  const tbsDer = Buffer.from(forge.asn1.toDer(tbs).getBytes(), 'binary');
  const signature = sign('sha256', tbsDer, issuerKeyPem);
  const { asn1 } = forge;
  const certificate = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    tbs,
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(sha256WithRsa).getBytes()),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.NULL, false, ''),
    ]),
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.BITSTRING, false, '\x00' + signature.toString('binary')),
  ]);
  return lfPem(forge.pem.encode({ type: 'CERTIFICATE', body: asn1.toDer(certificate).getBytes() }));
}

/** Parses one PEM certificate; a malformed one is MESHRELAY_ERR_CERTIFICATE naming `what`. */
export function parseCertificate(pem: string, what: string): ForgeCertificate {
  try {
    return forge.pki.certificateFromPem(pem);
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `${what} is not a readable RSA X.509 certificate: ${errorMessage(err)}`,
      { cause: err },
    );
  }
}

export function subjectField(cert: ForgeCertificate, name: NameAttribute['name']): string | undefined {
  const value: unknown = cert.subject.getField({ name })?.value;
  return typeof value === 'string' ? value : undefined;
}

export function uriSans(cert: ForgeCertificate): string[] {
  return altNames(cert).flatMap((n) => (n.type === SAN_URI && typeof n.value === 'string' ? [n.value] : []));
}

/** The subjectKeyIdentifier extension's bytes (forge binary string), if the certificate has one. */
export function subjectKeyIdentifierBytes(cert: ForgeCertificate): string | undefined {
  const ext = cert.getExtension('subjectKeyIdentifier') as { subjectKeyIdentifier?: string } | undefined;
  return ext?.subjectKeyIdentifier === undefined ? undefined : forge.util.hexToBytes(ext.subjectKeyIdentifier);
}

/** The authorityKeyIdentifier extension pointing at `issuer`, so chain building picks the right key. */
export function authorityKeyIdentifierFor(issuer: ForgeCertificate): object {
  const keyIdentifier = subjectKeyIdentifierBytes(issuer) ?? issuer.generateSubjectKeyIdentifier().getBytes();
  return { name: 'authorityKeyIdentifier', keyIdentifier };
}

export function uriSan(uri: string): object {
  return { type: SAN_URI, value: uri };
}

export function hostSan(host: string, isIp: boolean): object {
  return isIp ? { type: SAN_IP, ip: host } : { type: SAN_DNS, value: host };
}

/** The PEM with LF line ends (forge writes CRLF), so bundles built from it concatenate byte for byte. */
export function lfPem(pem: string): string {
  return pem.replace(/\r\n/g, '\n');
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

interface AltName {
  readonly type: number;
  readonly value?: unknown;
}

function altNames(cert: ForgeCertificate): readonly AltName[] {
  const ext = cert.getExtension('subjectAltName') as { altNames?: AltName[] } | undefined;
  return ext?.altNames ?? [];
}

/** An issuer must be valid now: a certificate from an expired CA would be rejected by every peer. */
export function assertIssuerValidAt(issuer: ForgeCertificate, now: Date): void {
  if (now > issuer.validity.notAfter || now < issuer.validity.notBefore) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `CA certificate is valid from ${issuer.validity.notBefore.toISOString()} to ${issuer.validity.notAfter.toISOString()}, not at ${now.toISOString()}`,
    );
  }
}
