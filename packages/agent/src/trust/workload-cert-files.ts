import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { DNS_LABEL, MeshrelayError } from '@meshrelay/api';
import { readIfPresent } from './atomic-file.ts';

/** The files gRPC's file_watcher certificate provider reads, per workload identity. */
export const WORKLOAD_FILES = {
  /** The leaf followed by the intermediate that issued it. */
  certificate: 'certificate.pem',
  privateKey: 'private_key.pem',
  /** The trust bundle (every root of the cluster's root-cert.pem). */
  ca: 'ca_certificate.pem',
} as const;

export interface WorkloadCertContent {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
  readonly caPem: string;
}

export interface WorkloadIdentity {
  readonly namespace: string;
  readonly serviceAccount: string;
}

/** The link that names the current version; kubelet's projected volumes use the same name. */
const DATA_LINK = '..data';
const SERVICE_ACCOUNT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/**
 * Workload certificates under `<dir>/<namespace>/<serviceAccount>/`. A version's three files are written into a
 * fresh hidden directory and `..data` is switched to it with one rename; the three names are links through
 * `..data`. So each file is replaced atomically AND a reader never pairs a new certificate with an old key
 * (gRPC's file_watcher reads them one by one at each refresh). The key is readable by its owner only.
 */
export class WorkloadCertFiles {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  get dir(): string {
    return this.#dir;
  }

  /** The directory of one identity; throws MESHRELAY_ERR_INVALID_ARGUMENT for a name that is not a Kubernetes name. */
  pathOf(id: WorkloadIdentity): string {
    if (!DNS_LABEL.test(id.namespace))
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `namespace "${id.namespace}" is not a DNS-1123 label`);
    if (!SERVICE_ACCOUNT_NAME.test(id.serviceAccount))
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `service account "${id.serviceAccount}" is not a DNS-1123 subdomain`,
      );
    return path.join(this.#dir, id.namespace, id.serviceAccount);
  }

  async write(id: WorkloadIdentity, content: WorkloadCertContent): Promise<void> {
    const dir = this.pathOf(id);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const version = `..${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    const versionDir = path.join(dir, version);
    await mkdir(versionDir, { mode: 0o755 });
    await writeNew(path.join(versionDir, WORKLOAD_FILES.certificate), content.certificatePem, 0o644);
    await writeNew(path.join(versionDir, WORKLOAD_FILES.privateKey), content.privateKeyPem, 0o600);
    await writeNew(path.join(versionDir, WORKLOAD_FILES.ca), content.caPem, 0o644);
    const previous = await readlink(path.join(dir, DATA_LINK)).catch(() => undefined);
    await swapLink(dir, DATA_LINK, version);
    for (const name of Object.values(WORKLOAD_FILES)) {
      const target = path.join(DATA_LINK, name);
      if ((await readlink(path.join(dir, name)).catch(() => undefined)) !== target) await swapLink(dir, name, target);
    }
    if (previous !== undefined && previous !== version)
      await rm(path.join(dir, previous), { recursive: true, force: true });
  }

  /** The current content of one identity, or undefined when any file is missing. */
  async read(id: WorkloadIdentity): Promise<WorkloadCertContent | undefined> {
    const dir = this.pathOf(id);
    const [certificatePem, privateKeyPem, caPem] = await Promise.all(
      [WORKLOAD_FILES.certificate, WORKLOAD_FILES.privateKey, WORKLOAD_FILES.ca].map((name) =>
        readIfPresent(path.join(dir, name)),
      ),
    );
    if (!certificatePem || !privateKeyPem || !caPem) return undefined;
    return { certificatePem, privateKeyPem, caPem };
  }

  async remove(id: WorkloadIdentity): Promise<void> {
    await rm(this.pathOf(id), { recursive: true, force: true });
  }

  /** Every identity that has a directory (names that are not Kubernetes names are left alone). */
  async list(): Promise<WorkloadIdentity[]> {
    const found: WorkloadIdentity[] = [];
    for (const namespace of await subdirs(this.#dir)) {
      if (!DNS_LABEL.test(namespace)) continue;
      for (const serviceAccount of await subdirs(path.join(this.#dir, namespace)))
        if (SERVICE_ACCOUNT_NAME.test(serviceAccount)) found.push({ namespace, serviceAccount });
    }
    return found;
  }
}

async function writeNew(file: string, content: string, mode: number): Promise<void> {
  const handle = await open(file, 'wx', mode);
  try {
    await handle.writeFile(content);
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Points `dir/name` at `target` with one rename of a fresh link over it. */
async function swapLink(dir: string, name: string, target: string): Promise<void> {
  const tmp = path.join(dir, `.${name}.tmp-${randomBytes(4).toString('hex')}`);
  await symlink(target, tmp);
  try {
    await rename(tmp, path.join(dir, name));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function subdirs(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
