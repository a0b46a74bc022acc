import { experimental, type ServerCredentials } from '@grpc/grpc-js';

type CaListener = (update: { caCertificate: Buffer } | null) => void;
type IdentityListener = (update: { certificate: Buffer; privateKey: Buffer } | null) => void;

/** A certificate provider whose material is fixed for the life of the server. */
class StaticCertificateProvider implements experimental.CertificateProvider {
  readonly #ca: Buffer;
  readonly #certificate: Buffer;
  readonly #privateKey: Buffer;

  constructor(caPem: string, certPem: string, keyPem: string) {
    this.#ca = Buffer.from(caPem);
    this.#certificate = Buffer.from(certPem);
    this.#privateKey = Buffer.from(keyPem);
  }

  addCaCertificateListener(listener: CaListener): void {
    listener({ caCertificate: this.#ca });
  }

  removeCaCertificateListener(): void {}

  addIdentityCertificateListener(listener: IdentityListener): void {
    listener({ certificate: this.#certificate, privateKey: this.#privateKey });
  }

  removeIdentityCertificateListener(): void {}
}

/**
 * Relay port credentials: TLS with the server certificate, client certificates
 * requested but not required at the handshake. Registration runs over
 * server-only TLS on the same port; every Relay method then demands a peer
 * certificate that the TLS layer verified against the relay CA (grpc-js exposes
 * it through getAuthContext() only when it was verified) and checks it again
 * against the registry.
 */
export function createRelayServerCredentials(caPem: string, certPem: string, keyPem: string): ServerCredentials {
  const provider = new StaticCertificateProvider(caPem, certPem, keyPem);
  // grpc-js takes (identity provider, CA provider, requireClientCertificate) in this order at runtime.
  return experimental.createCertificateProviderServerCredentials(provider, provider, false);
}
