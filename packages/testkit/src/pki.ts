/**
 * Certificate fixtures for tests: a relay CA, a localhost server certificate, client
 * certificates per cluster issued through the real CSR path, and a foreign CA whose client
 * certificate for cluster `a` must be refused everywhere.
 */
import { randomUUID } from 'node:crypto';
import {
  createCsr,
  createRootCa,
  DEFAULT_SERVER_HOSTS,
  generateKeyPair,
  issueServerCertificate,
  signClientCsr,
  type CaBundle,
  type IssuedServerCertificate,
  type KeyPair,
} from '@meshrelay/certs';

export interface TestClientCert {
  readonly cluster: string;
  /** The registration uid carried in the certificate's OU. */
  readonly uid: string;
  readonly keyPem: string;
  readonly certPem: string;
  readonly serial: string;
}

export interface TestPki {
  readonly trustDomain: string;
  readonly ca: CaBundle;
  /** For localhost, 127.0.0.1 and ::1. */
  readonly serverCert: IssuedServerCertificate;
  readonly clientCerts: Readonly<Record<string, TestClientCert>>;
  /** An unrelated CA, and a client certificate for cluster `a` signed by it. */
  readonly foreignCa: CaBundle;
  readonly foreignClientCert: TestClientCert;
}

export interface TestPkiOptions {
  readonly trustDomain?: string;
  readonly clusters: readonly string[];
  /** Default: the real clock, since real TLS handshakes check validity windows against it. */
  readonly now?: Date;
  /** Default: one day. */
  readonly lifetimeSeconds?: number;
}

export const TEST_TRUST_DOMAIN = 'meshrelay.test';
const DEFAULT_LIFETIME_SECONDS = 86_400;

// RSA keygen is slow (see docs/design/decisions/README.md#test-key-pool); keys are reused across
// calls in this process (certificates are not, so each call gets fresh serials and uids). Slots:
// CA, server, foreign CA, foreign client, clients.
const keyPool: KeyPair[] = [];
const SLOT = { ca: 0, server: 1, foreignCa: 2, foreignClient: 3, firstClient: 4 } as const;

function pooledKey(slot: number): KeyPair {
  while (keyPool.length <= slot) keyPool.push(generateKeyPair());
  return keyPool[slot]!;
}

/** Builds a complete test PKI; keys are cached in-process, certificates are new on every call. */
export function createTestPki(options: TestPkiOptions): TestPki {
  const trustDomain = options.trustDomain ?? TEST_TRUST_DOMAIN;
  const now = options.now ?? new Date();
  const lifetimeSeconds = options.lifetimeSeconds ?? DEFAULT_LIFETIME_SECONDS;
  const issue = (ca: CaBundle, cluster: string, slot: number) =>
    issueClientCert(ca, { cluster, trustDomain, now, lifetimeSeconds, keyPair: pooledKey(slot) });

  const ca = createRootCa({ commonName: 'meshrelay-test-root', now, keyPair: pooledKey(SLOT.ca) });
  const foreignCa = createRootCa({ commonName: 'meshrelay-test-root', now, keyPair: pooledKey(SLOT.foreignCa) });
  const serverCert = issueServerCertificate(ca, {
    hosts: [...DEFAULT_SERVER_HOSTS],
    lifetimeSeconds,
    now,
    keyPair: pooledKey(SLOT.server),
  });
  const clientCerts = Object.fromEntries(
    options.clusters.map((cluster, i) => [cluster, issue(ca, cluster, SLOT.firstClient + i)]),
  );
  return {
    trustDomain,
    ca,
    serverCert,
    clientCerts,
    foreignCa,
    foreignClientCert: issue(foreignCa, 'a', SLOT.foreignClient),
  };
}

interface ClientIssue {
  readonly cluster: string;
  readonly trustDomain: string;
  readonly now: Date;
  readonly lifetimeSeconds: number;
  readonly keyPair: KeyPair;
}

function issueClientCert(ca: CaBundle, issue: ClientIssue): TestClientCert {
  const { cluster, keyPair } = issue;
  const uid = randomUUID();
  const csr = createCsr({ ...keyPair, cluster });
  const issued = signClientCsr(ca, csr, {
    cluster,
    trustDomain: issue.trustDomain,
    uid,
    lifetimeSeconds: issue.lifetimeSeconds,
    now: issue.now,
  });
  return { cluster, uid, keyPem: keyPair.privateKeyPem, certPem: issued.certPem, serial: issued.serial };
}
