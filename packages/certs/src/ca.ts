import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { MeshrelayError } from '@meshrelay/api';
import { generateKeyPair, type KeyPair } from './keys.ts';
import { addSeconds, buildCertificate, CLOCK_SKEW_SECONDS, errorMessage, signCertificate } from './x509.ts';

/** A CA certificate and its private key, both PEM. */
export interface CaBundle {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface RootCaOptions {
  readonly commonName: string;
  /** Default 3650 (ten years): the root is replaced by an operator, not by rotation. */
  readonly validityDays?: number;
  readonly now: Date;
  /** A key to certify instead of a fresh one (test fixtures reuse keys to stay quick). */
  readonly keyPair?: KeyPair;
}

const DEFAULT_CA_VALIDITY_DAYS = 3650;
const PRINTABLE_ASCII = /^[\x20-\x7e]{1,64}$/;

/**
 * Creates a self-signed root CA: basicConstraints CA (critical), keyCertSign + cRLSign,
 * subjectKeyIdentifier. Valid from `now` − 60 s for `validityDays`.
 */
export function createRootCa(options: RootCaOptions): CaBundle {
  const { commonName, now } = options;
  const validityDays = options.validityDays ?? DEFAULT_CA_VALIDITY_DAYS;
  if (!PRINTABLE_ASCII.test(commonName)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `CA commonName must be 1-64 printable ASCII characters, got ${JSON.stringify(commonName)}`,
    );
  }
  if (!Number.isFinite(validityDays) || validityDays <= 0) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `CA validityDays must be a positive number, got ${validityDays}`,
    );
  }
  const keyPair = options.keyPair ?? generateKeyPair();
  const cert = buildCertificate({
    subject: [{ name: 'commonName', value: commonName }],
    publicKeyPem: keyPair.publicKeyPem,
    notBefore: addSeconds(now, -CLOCK_SKEW_SECONDS),
    notAfter: addSeconds(now, validityDays * 86_400),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      { name: 'subjectKeyIdentifier' },
    ],
  });
  // Self-signed: the certificate is its own issuer.
  const certPem = signCertificate(cert, cert, keyPair.privateKeyPem);
  return { certPem, keyPem: keyPair.privateKeyPem };
}

/**
 * Checks that a bundle read from storage is usable as a signing CA: a readable CA certificate
 * and a private key that belongs to it. Throws MESHRELAY_ERR_CERTIFICATE naming `source`.
 */
export function assertCaBundle(bundle: CaBundle, source: string): void {
  const fail = (reason: string, cause?: unknown): never => {
    throw new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `${source}: ${reason}`, { cause });
  };
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(bundle.certPem);
  } catch (err) {
    return fail(`certPem is not a readable certificate (${errorMessage(err)})`, err);
  }
  if (!cert.ca) fail('certPem is not a CA certificate (basicConstraints CA is not set)');
  let keySpki: Buffer;
  try {
    keySpki = createPublicKey(createPrivateKey(bundle.keyPem)).export({ type: 'spki', format: 'der' });
  } catch (err) {
    return fail(`keyPem is not a readable private key (${errorMessage(err)})`, err);
  }
  if (!keySpki.equals(cert.publicKey.export({ type: 'spki', format: 'der' }))) {
    fail('keyPem does not belong to certPem');
  }
}
