import { X509Certificate, createPrivateKey } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import { issueWorkloadCertificate, jitteredLifetimeSeconds, renewalTime, workloadSpiffeId } from '@meshrelay/certs';
import { readIfPresent, replaceFile } from './atomic-file.ts';
import { certificateBlocks, type Cacerts } from './cacerts.ts';
import type { WorkloadCertFiles, WorkloadIdentity } from './workload-cert-files.ts';

/** At most this many workloads are listed in a MeshTrust report; the rest are counted. */
export const MAX_LISTED_WORKLOADS = 200;

export interface WorkloadIssuerOptions {
  readonly files: WorkloadCertFiles;
  /** The base lifetime (`--workload-cert-ttl`), jittered per certificate. */
  readonly ttlSeconds: number;
  readonly logger: Logger;
  readonly now?: () => number;
  readonly random?: () => number;
}

/** One workload's certificate as held. */
interface Held {
  readonly id: WorkloadIdentity;
  readonly spiffeId: string;
  readonly notAfterMs: number;
  readonly renewAtMs: number;
  /** The intermediate's certificate it was issued from, and the bundle written beside it. */
  readonly intermediatePem: string;
  readonly caPem: string;
}

/** What the issuer reports to the management plane. */
export interface WorkloadReport {
  readonly workloads: Array<{ spiffeId: string; notAfterUnixMs: number }>;
  readonly workloadsNotListed: number;
}

/** Leaves issued per signing root: the latest notAfter of each, kept across restarts. */
type IssuedUnder = Record<string, number>;
const ISSUED_UNDER_FILE = '.issued-under-roots.json';

/**
 * Issues each workload identity a certificate from the cluster's intermediate (lifetime jittered, renewed at a
 * jittered point of its life), reissues every one at once when the intermediate changes, rewrites the bundle
 * beside them when only the bundle changes, and removes the files of identities no longer discovered. Remembers,
 * per signing root, until when leaves issued under it live: the rotation must not drop a root before they expire.
 */
export class WorkloadIssuer {
  readonly #opts: WorkloadIssuerOptions;
  readonly #now: () => number;
  readonly #held = new Map<string, Held>();
  #issuedUnder: IssuedUnder | undefined;
  #loadedIds = new Set<string>();
  #swept = false;
  readonly #failing = new Map<string, string>();

  constructor(options: WorkloadIssuerOptions) {
    this.#opts = options;
    this.#now = options.now ?? Date.now;
  }

  /** How many identities hold a certificate. */
  get count(): number {
    return this.#held.size;
  }

  /** The earliest notAfter of the held certificates (ms), or undefined when none. */
  get earliestNotAfterMs(): number | undefined {
    let earliest: number | undefined;
    for (const h of this.#held.values()) if (earliest === undefined || h.notAfterMs < earliest) earliest = h.notAfterMs;
    return earliest;
  }

  /**
   * Brings every identity up to date with `cacerts` and the trust domain: issues what is missing, due for renewal
   * or from another intermediate; rewrites the bundle where only it changed; removes identities not in `ids`.
   * An identity that fails is logged and tried again on the next call; the others go on.
   */
  async reconcile(ids: readonly WorkloadIdentity[], cacerts: Cacerts, trustDomain: string): Promise<number> {
    const now = this.#now();
    const wanted = new Map(ids.map((id) => [keyOf(id), id]));
    let written = 0;
    for (const [key, id] of wanted) {
      try {
        if (await this.#reconcileOne(key, id, cacerts, trustDomain, now)) written++;
        this.#failing.delete(key);
      } catch (err) {
        // Tried again at every reconcile; logged when the problem is new, not at every try.
        const message = (err as Error).message;
        if (this.#failing.get(key) !== message)
          this.#opts.logger.error(
            { err, namespace: id.namespace, serviceAccount: id.serviceAccount },
            'workload certificate not issued',
          );
        this.#failing.set(key, message);
      }
    }
    if (!this.#swept) {
      // Directories an earlier run left for identities no longer discovered.
      this.#swept = true;
      for (const id of await this.#opts.files.list())
        if (!wanted.has(keyOf(id)) && !this.#held.has(keyOf(id))) await this.#opts.files.remove(id);
    }
    for (const key of [...this.#held.keys()]) {
      if (wanted.has(key)) continue;
      const held = this.#held.get(key) as Held;
      this.#held.delete(key);
      await this.#opts.files.remove(held.id);
    }
    return written;
  }

  /** The held certificates, for the MeshTrust report (at most MAX_LISTED_WORKLOADS, sorted by SPIFFE id). */
  report(): WorkloadReport {
    const all = [...this.#held.values()].sort((a, b) => (a.spiffeId < b.spiffeId ? -1 : 1));
    return {
      workloads: all
        .slice(0, MAX_LISTED_WORKLOADS)
        .map((h) => ({ spiffeId: h.spiffeId, notAfterUnixMs: h.notAfterMs })),
      workloadsNotListed: Math.max(0, all.length - MAX_LISTED_WORKLOADS),
    };
  }

  /** The latest notAfter (ms) of leaves issued under a root other than `signingRootId` still valid now; 0 if none. */
  async oldRootLeafNotAfterMs(signingRootId: string): Promise<number> {
    const now = this.#now();
    let latest = 0;
    for (const [rootId, notAfter] of Object.entries(await this.#issuedUnderRoots()))
      if (rootId !== signingRootId && notAfter > now && notAfter > latest) latest = notAfter;
    return latest;
  }

  async #reconcileOne(key: string, id: WorkloadIdentity, cacerts: Cacerts, td: string, now: number): Promise<boolean> {
    const held = this.#held.get(key) ?? (await this.#loadHeld(key, id, td));
    const intermediatePem = cacerts.files['ca-cert.pem'];
    const caPem = cacerts.files['root-cert.pem'];
    const spiffeId = workloadSpiffeId(td, id.namespace, id.serviceAccount);
    const current =
      held !== undefined &&
      held.intermediatePem === intermediatePem &&
      held.spiffeId === spiffeId &&
      now < held.renewAtMs &&
      now < held.notAfterMs;
    if (current && held.caPem === caPem) return false;
    if (current) {
      // Only the bundle changed (a root added or removed): the same leaf and key, the new bundle beside them.
      const content = await this.#opts.files.read(id);
      if (content !== undefined) {
        await this.#opts.files.write(id, { ...content, caPem });
        this.#held.set(key, { ...held, caPem });
        return true;
      }
    }
    const issued = issueWorkloadCertificate({
      intermediate: { certPem: intermediatePem, keyPem: cacerts.files['ca-key.pem'] },
      trustDomain: td,
      namespace: id.namespace,
      serviceAccount: id.serviceAccount,
      lifetimeSeconds: jitteredLifetimeSeconds(this.#opts.ttlSeconds, this.#opts.random),
      now: new Date(now),
    });
    // The certificate's own notAfter (whole seconds), recorded before the files are written: a leaf that may exist
    // counts for the rotation.
    const notAfterMs = Date.parse(new X509Certificate(issued.certPem).validTo);
    await this.#recordIssued(cacerts.signingRootId, notAfterMs);
    await this.#opts.files.write(id, {
      certificatePem: `${issued.certPem.trim()}\n${intermediatePem.trim()}\n`,
      privateKeyPem: issued.keyPem,
      caPem,
    });
    const renewAt = renewalTime(issued.notBefore, new Date(notAfterMs), this.#opts.random).getTime();
    this.#held.set(key, {
      id,
      spiffeId,
      notAfterMs,
      renewAtMs: renewAt,
      intermediatePem,
      caPem,
    });
    this.#opts.logger.debug(
      { spiffeId, notAfter: issued.notAfter.toISOString(), renewAt: new Date(renewAt).toISOString() },
      'workload certificate issued',
    );
    return true;
  }

  /** A certificate left by an earlier run, so a restart does not reissue what is still good. */
  async #loadHeld(key: string, id: WorkloadIdentity, td: string): Promise<Held | undefined> {
    if (this.#loadedIds.has(key)) return undefined;
    this.#loadedIds.add(key);
    const content = await this.#opts.files.read(id).catch(() => undefined);
    if (content === undefined) return undefined;
    const [leafPem, intermediatePem] = certificateBlocks(content.certificatePem);
    if (leafPem === undefined || intermediatePem === undefined) return undefined;
    try {
      const leaf = new X509Certificate(leafPem);
      if (!leaf.checkPrivateKey(createPrivateKey(content.privateKeyPem))) return undefined;
      const notBefore = new Date(leaf.validFrom);
      const notAfter = new Date(leaf.validTo);
      const spiffeId = workloadSpiffeId(td, id.namespace, id.serviceAccount);
      if (leaf.subjectAltName !== `URI:${spiffeId}`) return undefined;
      const held: Held = {
        id,
        spiffeId,
        notAfterMs: notAfter.getTime(),
        renewAtMs: renewalTime(notBefore, notAfter, this.#opts.random).getTime(),
        intermediatePem,
        caPem: content.caPem,
      };
      this.#held.set(key, held);
      return held;
    } catch {
      return undefined;
    }
  }

  async #issuedUnderRoots(): Promise<IssuedUnder> {
    if (this.#issuedUnder !== undefined) return this.#issuedUnder;
    const text = await readIfPresent(path.join(this.#opts.files.dir, ISSUED_UNDER_FILE)).catch(() => undefined);
    let parsed: IssuedUnder = {};
    try {
      const value: unknown = text === undefined ? {} : JSON.parse(text);
      if (value !== null && typeof value === 'object')
        parsed = Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'number')) as IssuedUnder;
    } catch {
      // An unreadable record counts as none; the leaves on disk are still reissued under the current root.
    }
    this.#issuedUnder = parsed;
    return parsed;
  }

  async #recordIssued(rootId: string, notAfterMs: number): Promise<void> {
    const roots = await this.#issuedUnderRoots();
    if ((roots[rootId] ?? 0) >= notAfterMs) return;
    const now = this.#now();
    // Roots whose last leaf expired are dropped, so the record stays as small as the roots in use.
    const next: IssuedUnder = Object.fromEntries(Object.entries(roots).filter(([, v]) => v > now));
    next[rootId] = notAfterMs;
    await replaceFile(path.join(this.#opts.files.dir, ISSUED_UNDER_FILE), JSON.stringify(next), 0o644);
    this.#issuedUnder = next;
  }
}

function keyOf(id: WorkloadIdentity): string {
  return `${id.namespace}/${id.serviceAccount}`;
}
