// Workload (service) certificates issued from a cluster's intermediate, and when to renew them.

import { generateKeyPairSync } from 'node:crypto';
import { MeshrelayError } from '@meshrelay/api';
import type { CaBundle } from './ca.ts';
import type { KeyPair } from './keys.ts';
import { assertTrustDomain } from './mesh-ca.ts';
import {
  addSeconds,
  assertIssuerValidAt,
  authorityKeyIdentifierFor,
  CLOCK_SKEW_SECONDS,
  parseCertificate,
  signCertificateForAnyKey,
  uriSan,
} from './x509.ts';

export interface WorkloadCertOptions {
  readonly intermediate: CaBundle;
  readonly trustDomain: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly lifetimeSeconds: number;
  readonly now: Date;
  /** The workload's key (RSA or EC); a fresh EC P-256 key when absent. */
  readonly keyPair?: KeyPair;
}

export interface IssuedWorkloadCert {
  readonly certPem: string;
  readonly keyPem: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DEFAULT_JITTER_FRACTION = 0.1;
const RENEW_FROM = 0.6;
const RENEW_SPAN = 0.2;

function invalid(message: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', message);
}

/** The SPIFFE id Istio gives a workload: spiffe://<trustDomain>/ns/<namespace>/sa/<serviceAccount>. */
export function workloadSpiffeId(trustDomain: string, namespace: string, serviceAccount: string): string {
  return `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`;
}

/**
 * Issues a workload certificate from the intermediate: empty subject with a critical URI SAN
 * (the SPIFFE X.509-SVID shape), CA:FALSE (critical), keyUsage digitalSignature + keyEncipherment
 * (critical), extKeyUsage serverAuth + clientAuth, AKI. Valid from now − 60 s (not before the
 * intermediate) for lifetimeSeconds, never past the intermediate's notAfter.
 */
export function issueWorkloadCertificate(options: WorkloadCertOptions): IssuedWorkloadCert {
  const { intermediate, trustDomain, namespace, serviceAccount, lifetimeSeconds, now } = options;
  assertTrustDomain(trustDomain);
  if (!DNS_LABEL.test(namespace)) throw invalid(`namespace ${JSON.stringify(namespace)} is not a DNS-1123 label`);
  if (!DNS_SUBDOMAIN.test(serviceAccount)) {
    throw invalid(`service account ${JSON.stringify(serviceAccount)} is not a DNS-1123 subdomain`);
  }
  if (!Number.isFinite(lifetimeSeconds) || lifetimeSeconds <= 0) {
    throw invalid(`workload certificate lifetimeSeconds must be a positive number, got ${lifetimeSeconds}`);
  }
  const issuer = parseCertificate(intermediate.certPem, 'intermediate CA certificate');
  assertIssuerValidAt(issuer, now);
  const keyPair = options.keyPair ?? ecKeyPair();
  const requested = addSeconds(now, Math.floor(lifetimeSeconds));
  const notAfter = requested < issuer.validity.notAfter ? requested : issuer.validity.notAfter;
  // Never before the intermediate's own start: a chain whose leaf predates its issuer confuses strict validators.
  const skewed = addSeconds(now, -CLOCK_SKEW_SECONDS);
  const notBefore = skewed > issuer.validity.notBefore ? skewed : issuer.validity.notBefore;
  const certPem = signCertificateForAnyKey(
    {
      subject: [],
      publicKeyPem: keyPair.publicKeyPem,
      notBefore,
      notAfter,
      extensions: [
        { name: 'basicConstraints', cA: false, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
        {
          name: 'subjectAltName',
          altNames: [uriSan(workloadSpiffeId(trustDomain, namespace, serviceAccount))],
          critical: true,
        },
        authorityKeyIdentifierFor(issuer),
      ],
    },
    issuer,
    intermediate.keyPem,
  );
  return { certPem, keyPem: keyPair.privateKeyPem, notBefore, notAfter };
}

/**
 * A lifetime randomly shortened or extended by up to `fraction` of `baseSeconds`, so certificates
 * issued together are not all renewed together. Whole seconds, at least 1.
 */
export function jitteredLifetimeSeconds(
  baseSeconds: number,
  random: () => number = Math.random,
  fraction: number = DEFAULT_JITTER_FRACTION,
): number {
  if (!Number.isFinite(baseSeconds) || baseSeconds <= 0) {
    throw invalid(`base lifetime must be a positive number of seconds, got ${baseSeconds}`);
  }
  if (!Number.isFinite(fraction) || fraction < 0 || fraction >= 1) {
    throw invalid(`jitter fraction must be in [0, 1), got ${fraction}`);
  }
  const offset = (2 * unitRandom(random) - 1) * fraction;
  return Math.max(1, Math.round(baseSeconds * (1 + offset)));
}

/** When to renew: a random point between 60 % and 80 % of the way from notBefore to notAfter. */
export function renewalTime(notBefore: Date, notAfter: Date, random: () => number = Math.random): Date {
  const start = notBefore.getTime();
  const span = notAfter.getTime() - start;
  if (!Number.isFinite(span) || span < 0) {
    throw invalid(`certificate validity ${notBefore.toISOString()} .. ${notAfter.toISOString()} is not a range`);
  }
  return new Date(start + Math.round(span * (RENEW_FROM + RENEW_SPAN * unitRandom(random))));
}

/** The random source's value clamped to [0, 1), so a faulty source cannot push a time out of bounds. */
function unitRandom(random: () => number): number {
  const value = random();
  if (!Number.isFinite(value) || value < 0) return 0;
  return value >= 1 ? 1 - Number.EPSILON : value;
}

function ecKeyPair(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}
