import { createRootCa, generateKeyPair, issueServerCertificate, signClientCsr, type CaBundle, type KeyPair } from '@meshrelay/certs';

/** A relay CA and a server certificate for localhost, built once per test file (RSA keys are slow). */
export interface TestPki {
  readonly ca: CaBundle;
  readonly serverCertPem: string;
  readonly serverKeyPem: string;
  /** A second, unrelated CA (a server the agent must not trust). */
  readonly foreignCa: CaBundle;
  /** One key pair reused for every server certificate the tests issue. */
  readonly serverKeyPair: KeyPair;
}

let cached: TestPki | undefined;

export function testPki(): TestPki {
  if (cached) return cached;
  const now = new Date();
  const ca = createRootCa({ commonName: 'meshrelay test relay CA', now });
  const foreignCa = createRootCa({ commonName: 'foreign CA', now });
  const serverKeyPair = generateKeyPair();
  const server = issueServerCertificate(ca, { hosts: ['localhost'], lifetimeSeconds: 3600, now, keyPair: serverKeyPair });
  cached = { ca, foreignCa, serverKeyPair, serverCertPem: server.certPem, serverKeyPem: server.keyPem };
  return cached;
}

/** Signs an agent CSR the way the management server does. */
export function issueClientCertificate(pki: TestPki, csrPem: string, cluster: string, uid: string, lifetimeSeconds: number): { certPem: string; notAfter: Date } {
  return signClientCsr(pki.ca, csrPem, { cluster, trustDomain: 'meshrelay.test', uid, lifetimeSeconds, now: new Date() });
}
