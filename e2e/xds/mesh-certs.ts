/**
 * Mesh certificates for the xDS security end-to-end tests, made as the management plane and the
 * agents make them: one mesh root, an intermediate per cluster signed from the cluster's CSR, and
 * workload certificates from the intermediates, written where gRPC's file_watcher certificate
 * provider reads them (`<dir>/<cluster>/<namespace>/<serviceAccount>/{certificate,private_key,ca_certificate}.pem`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createIntermediateCsr,
  createMeshRoot,
  issueWorkloadCertificate,
  signIntermediateCsr,
  type CaBundle,
} from '@meshrelay/certs';
import { buildXdsBootstrap } from '@meshrelay/meshctl';

export interface WorkloadIdentity {
  readonly cluster: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

export class MeshCertificates {
  readonly root: CaBundle;
  readonly #dir: string;
  readonly #trustDomains: ReadonlyMap<string, string>;
  readonly #intermediates: ReadonlyMap<string, CaBundle>;

  private constructor(dir: string, root: CaBundle, trustDomains: Map<string, string>, inters: Map<string, CaBundle>) {
    this.#dir = dir;
    this.root = root;
    this.#trustDomains = trustDomains;
    this.#intermediates = inters;
  }

  /** A root and, for each cluster (name → trust domain), an intermediate signed from its CSR. */
  static async create(dir: string, trustDomains: Readonly<Record<string, string>>): Promise<MeshCertificates> {
    const now = new Date();
    const root = createMeshRoot({ now, rsaKeyBits: 2048 });
    const intermediates = new Map<string, CaBundle>();
    for (const [cluster, trustDomain] of Object.entries(trustDomains)) {
      const { csrPem, keyPem } = await createIntermediateCsr({ cluster, trustDomain, rsaKeyBits: 2048 });
      const issued = signIntermediateCsr({ root, csrPem, cluster, trustDomain, ttlDays: 1, now });
      intermediates.set(cluster, { certPem: issued.certPem, keyPem });
    }
    return new MeshCertificates(dir, root, new Map(Object.entries(trustDomains)), intermediates);
  }

  trustDomain(cluster: string): string {
    const td = this.#trustDomains.get(cluster);
    if (td === undefined) throw new Error(`no trust domain for ${cluster}`);
    return td;
  }

  /** Issues the workload's certificate and writes the three files; returns their directory. */
  writeWorkload(w: WorkloadIdentity): string {
    const intermediate = this.#intermediates.get(w.cluster);
    if (intermediate === undefined) throw new Error(`no intermediate for ${w.cluster}`);
    const leaf = issueWorkloadCertificate({
      intermediate,
      trustDomain: this.trustDomain(w.cluster),
      namespace: w.namespace,
      serviceAccount: w.serviceAccount,
      lifetimeSeconds: 3_600,
      now: new Date(),
    });
    const dir = join(this.#dir, w.cluster, w.namespace, w.serviceAccount);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'certificate.pem'), leaf.certPem + intermediate.certPem);
    writeFileSync(join(dir, 'private_key.pem'), leaf.keyPem, { mode: 0o600 });
    writeFileSync(join(dir, 'ca_certificate.pem'), this.root.certPem);
    return dir;
  }
}

/**
 * A workload's bootstrap, as `meshctl xds bootstrap --workload-certs <certDir>` prints it: so the
 * bootstrap operators are told to use is the one these calls prove (its certificate provider name
 * and server Listener template must be the ones the agent's xDS uses, or no call succeeds).
 */
export function workloadBootstrap(xdsPort: number, nodeId: string, certDir: string): string {
  return JSON.stringify(buildXdsBootstrap(`localhost:${xdsPort}`, nodeId, undefined, { dir: certDir, refresh: '1s' }));
}
