import { isIP } from 'node:net';
import { MeshrelayError } from '@meshrelay/api';
import type { CaBundle } from './ca.ts';
import { generateKeyPair, type KeyPair } from './keys.ts';
import {
  addSeconds,
  assertIssuerValidAt,
  authorityKeyIdentifierFor,
  buildCertificate,
  CLOCK_SKEW_SECONDS,
  hostSan,
  parseCertificate,
  signCertificate,
} from './x509.ts';

export interface ServerCertificateOptions {
  /** DNS names and IP addresses the server answers on; the first short enough (≤ 64 characters) is also the CN. */
  readonly hosts: readonly string[];
  readonly lifetimeSeconds: number;
  readonly now: Date;
  /** A key to certify instead of a fresh one. */
  readonly keyPair?: KeyPair;
}

export interface IssuedServerCertificate {
  readonly certPem: string;
  readonly keyPem: string;
  readonly notAfter: Date;
}

/** Host names a relay server certificate always covers; configured names are added to these. */
export const DEFAULT_SERVER_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '::1'];

// X.520 caps a CN at 64 characters; the SANs, not the CN, are what TLS clients check.
const MAX_CN_LENGTH = 64;
const FALLBACK_CN = 'meshrelay-server';
const DNS_NAME = /^(\*\.)?[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$/;

/**
 * Issues a TLS server certificate signed by `ca`: DNS SANs for names, IP SANs for IPv4/IPv6
 * addresses, extKeyUsage serverAuth, valid from now − 60 s for lifetimeSeconds (capped at the
 * CA's expiry). Throws MESHRELAY_ERR_INVALID_ARGUMENT for an empty or malformed host list.
 */
export function issueServerCertificate(ca: CaBundle, options: ServerCertificateOptions): IssuedServerCertificate {
  const { lifetimeSeconds, now } = options;
  const hosts = [...new Set(options.hosts)];
  if (hosts.length === 0)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'a server certificate needs at least one host');
  const bad = hosts.find((h) => isIP(h) === 0 && !DNS_NAME.test(h));
  if (bad !== undefined)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `server certificate host ${JSON.stringify(bad)} is neither a DNS name nor an IP address`,
    );
  if (!Number.isInteger(lifetimeSeconds) || lifetimeSeconds <= 0) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `certificate lifetimeSeconds must be a positive integer, got ${lifetimeSeconds}`,
    );
  }
  const caCert = parseCertificate(ca.certPem, 'CA certificate');
  assertIssuerValidAt(caCert, now);
  const keyPair = options.keyPair ?? generateKeyPair();
  const requested = addSeconds(now, lifetimeSeconds);
  const notAfter = requested < caCert.validity.notAfter ? requested : caCert.validity.notAfter;
  const cert = buildCertificate({
    subject: [{ name: 'commonName', value: hosts.find((h) => h.length <= MAX_CN_LENGTH) ?? FALLBACK_CN }],
    publicKeyPem: keyPair.publicKeyPem,
    notBefore: addSeconds(now, -CLOCK_SKEW_SECONDS),
    notAfter,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: hosts.map((h) => hostSan(h, isIP(h) !== 0)) },
      { name: 'subjectKeyIdentifier' },
      authorityKeyIdentifierFor(caCert),
    ],
  });
  return { certPem: signCertificate(cert, caCert, ca.keyPem), keyPem: keyPair.privateKeyPem, notAfter };
}
