// Istio's plugged-in CA material (`cacerts`): what the agent writes for its cluster's istiod and
// reads back at start, so the last good intermediate keeps serving while the management plane is away.

import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { MeshrelayError } from '@meshrelay/api';

/** The four data keys of Istio's `cacerts`, and nothing else (never `istio-generated`). */
export const CACERTS_KEYS = ['ca-cert.pem', 'ca-key.pem', 'cert-chain.pem', 'root-cert.pem'] as const;
export type CacertsKey = (typeof CACERTS_KEYS)[number];

/** The text of each `cacerts` key. */
export interface CacertsFiles {
  /** The cluster's intermediate CA certificate. */
  readonly 'ca-cert.pem': string;
  /** Its private key (generated in this cluster; never sent anywhere). */
  readonly 'ca-key.pem': string;
  /** The intermediate followed by the root that signed it. */
  readonly 'cert-chain.pem': string;
  /** The trust bundle: every root this cluster trusts, concatenated in the management plane's order. */
  readonly 'root-cert.pem': string;
}

/** What the agent knows of a checked `cacerts`. */
export interface Cacerts {
  readonly files: CacertsFiles;
  /** rootId of the root that signed the intermediate. */
  readonly signingRootId: string;
  /** rootIds of the bundle, in order. */
  readonly bundleRootIds: readonly string[];
  readonly notBefore: Date;
  readonly notAfter: Date;
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificate PEM blocks of a text, each ending in one "\n". */
export function certificateBlocks(text: string): string[] {
  return (text.match(PEM_BLOCK) ?? []).map((block) => `${block}\n`);
}

/** Lower-case hex sha256 of a certificate's DER, first 16 characters (the mesh's root id). */
export function certificateId(certPem: string): string {
  return createHash('sha256').update(new X509Certificate(certPem).raw).digest('hex').slice(0, 16);
}

/** The bundle text: the PEMs in order, each ending in exactly one "\n". */
export function joinPems(pems: readonly string[]): string {
  return pems.map((pem) => `${pem.trim()}\n`).join('');
}

/**
 * Checks that `files` are a usable plugged-in CA and describes them. Throws MESHRELAY_ERR_CERTIFICATE naming
 * what is wrong: an unparsable certificate, a key that does not match, an intermediate that is not a CA, is
 * not signed by the chain's root, has expired at `now`, or whose root is missing from the bundle.
 */
export function checkCacerts(files: CacertsFiles, now: Date): Cacerts {
  const fail = (message: string): never => {
    throw new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `cacerts: ${message}`);
  };
  const intermediate = parse(files['ca-cert.pem'], 'ca-cert.pem', fail);
  if (!intermediate.ca) fail('ca-cert.pem is not a CA certificate');
  try {
    if (!intermediate.checkPrivateKey(createPrivateKey(files['ca-key.pem'])))
      fail('ca-key.pem does not match ca-cert.pem');
  } catch (err) {
    if (err instanceof MeshrelayError) throw err;
    fail(`ca-key.pem is not a private key: ${(err as Error).message}`);
  }
  const chain = certificateBlocks(files['cert-chain.pem']);
  if (chain.length < 2)
    fail(`cert-chain.pem holds ${chain.length} certificate(s), expected the intermediate and its root`);
  const chainHead = parse(chain[0] as string, 'cert-chain.pem', fail);
  if (chainHead.fingerprint256 !== intermediate.fingerprint256) fail('cert-chain.pem does not start with ca-cert.pem');
  const rootPem = chain[chain.length - 1] as string;
  const root = parse(rootPem, 'cert-chain.pem root', fail);
  if (!intermediate.verify(root.publicKey)) fail('ca-cert.pem is not signed by the root in cert-chain.pem');
  const bundle = certificateBlocks(files['root-cert.pem']);
  if (bundle.length === 0) fail('root-cert.pem holds no certificate');
  const bundleRootIds = bundle.map((pem) => {
    parse(pem, 'root-cert.pem', fail);
    return certificateId(pem);
  });
  const signingRootId = certificateId(rootPem);
  if (!bundleRootIds.includes(signingRootId))
    fail(`root-cert.pem does not hold the root ${signingRootId} that signed ca-cert.pem`);
  const notAfter = new Date(intermediate.validTo);
  if (notAfter.getTime() <= now.getTime()) fail(`ca-cert.pem expired at ${notAfter.toISOString()}`);
  return { files, signingRootId, bundleRootIds, notBefore: new Date(intermediate.validFrom), notAfter };
}

function parse(pem: string, what: string, fail: (message: string) => never): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (err) {
    return fail(`${what} is not a PEM certificate: ${(err as Error).message}`);
  }
}

/** Where `cacerts` lives: a directory (file provider) or the Kubernetes Secret. */
export interface CacertsStore {
  /** Human-readable place, for logs and status. */
  readonly description: string;
  /** The stored files, or undefined when there are none (any key missing counts as none). */
  load(): Promise<CacertsFiles | undefined>;
  /**
   * Replaces the stored files with `next`. `previous` is what was stored before (undefined when nothing), so a
   * store writing file by file can order the writes (a root is never missing from root-cert.pem while a chain
   * it signs is live).
   */
  write(next: CacertsFiles, previous: CacertsFiles | undefined): Promise<void>;
}
