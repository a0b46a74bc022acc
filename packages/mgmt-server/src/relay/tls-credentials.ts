import { ServerCredentials } from '@grpc/grpc-js';

/**
 * Relay port credentials: TLS with the server certificate, client certificates
 * requested but not required at the handshake. Registration runs over
 * server-only TLS on the same port; every Relay method then demands a peer
 * certificate that the TLS layer verified against the relay CA (grpc-js exposes
 * it through getAuthContext() only when `socket.authorized` is true) and checks
 * it again against the registry. A handshake that does not finish within
 * handshakeTimeoutMs is aborted and its socket closed.
 */
export function createRelayServerCredentials(
  caPem: string,
  certPem: string,
  keyPem: string,
  handshakeTimeoutMs: number,
): ServerCredentials {
  const credentials = ServerCredentials.createSsl(
    Buffer.from(caPem),
    [{ cert_chain: Buffer.from(certPem), private_key: Buffer.from(keyPem) }],
    true,
  );
  // createSsl(…, true) makes Node's TLS server reject clients without a
  // certificate during the handshake, which would refuse Register. Keep the
  // request, drop the rejection: unverified peers get no auth context.
  // The options go to tls.createServer as they are (handshakeTimeout included).
  const options = (
    credentials as unknown as { serverConstructorOptions: { rejectUnauthorized?: boolean; handshakeTimeout?: number } }
  ).serverConstructorOptions;
  options.rejectUnauthorized = false;
  options.handshakeTimeout = handshakeTimeoutMs;
  return credentials;
}
