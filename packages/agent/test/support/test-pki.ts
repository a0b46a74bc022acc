import { signClientCsr } from '@meshrelay/certs';
import { createTestPki, type TestPki } from '@meshrelay/testkit';

export type { TestPki } from '@meshrelay/testkit';

let cached: TestPki | undefined;

/** The relay CA and localhost server certificate shared by the tests of one file. */
export function testPki(): TestPki {
  cached ??= createTestPki({ clusters: ['east'] });
  return cached;
}

/** Signs an agent CSR the way the management server does. */
export function issueClientCertificate(
  pki: TestPki,
  csrPem: string,
  cluster: string,
  uid: string,
  lifetimeSeconds: number,
): { certPem: string; notAfter: Date } {
  return signClientCsr(pki.ca, csrPem, {
    cluster,
    trustDomain: pki.trustDomain,
    uid,
    lifetimeSeconds,
    now: new Date(),
  });
}
