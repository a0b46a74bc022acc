import { Client, credentials, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, RELAY_SERVICE, type relay } from '@meshrelay/api';
import type { ClientCredentials } from '../credentials/credential-store.ts';

/** What Register and Renew hand back. */
export interface IssuedCertificate {
  readonly certificatePem: string;
  readonly caBundlePem: string;
  readonly notAfterUnixMs: number;
}

/**
 * gRPC's own reconnect backoff, set out of reach. A channel makes one connection attempt; the
 * agent's loop owns reconnecting and closes the channel after any failure. But a closed channel's
 * subchannel still runs the backoff of its failed attempt (1 s by default), then connects on its
 * own and holds a connection no session uses until the server's idle timeout: after a server
 * restart every failed attempt became one, enough to fill --max-connections-per-peer and reset
 * the agents' real attempts. Bounded so that 1.2 × it (gRPC's jitter) stays a valid timer.
 */
const SUBCHANNEL_BACKOFF_MS = 86_400_000;

/** Channel options of every relay channel: no gRPC-level retries or reconnects (the agent's loop owns reconnecting). */
export const RELAY_CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.enable_retries': 0,
  'grpc.max_receive_message_length': 8 * 1024 * 1024,
  'grpc.initial_reconnect_backoff_ms': SUBCHANNEL_BACKOFF_MS,
  'grpc.max_reconnect_backoff_ms': SUBCHANNEL_BACKOFF_MS,
};

/** Server-only TLS against the relay root CA: the bootstrap channel for Register. */
export function registrationCredentials(rootCaPem: string): ChannelCredentials {
  return credentials.createSsl(Buffer.from(`${rootCaPem.trim()}\n`));
}

/**
 * mTLS with the agent's client certificate. The server is trusted if it chains
 * to the CA bundle from registration or to the bootstrap root CA (so a server
 * certificate issued under either keeps working).
 */
export function mtlsCredentials(creds: ClientCredentials, rootCaPem?: string): ChannelCredentials {
  const trust =
    rootCaPem && !creds.caBundlePem.includes(rootCaPem.trim())
      ? `${creds.caBundlePem.trim()}\n${rootCaPem.trim()}\n`
      : creds.caBundlePem;
  return credentials.createSsl(
    Buffer.from(trust),
    Buffer.from(creds.keyPair.privateKeyPem),
    Buffer.from(creds.certificatePem),
  );
}

export interface RegisterInput {
  readonly address: string;
  readonly rootCaPem: string;
  readonly cluster: string;
  readonly token: string;
  readonly csrPem: string;
  readonly timeoutMs: number;
}

/** Registration.Register over server-only TLS. Rejects with the gRPC error (code, details). */
export async function registerCluster(input: RegisterInput): Promise<IssuedCertificate> {
  const client = new Client(input.address, registrationCredentials(input.rootCaPem), RELAY_CHANNEL_OPTIONS);
  try {
    const method = REGISTRATION_SERVICE.register;
    const request: relay.v1.IRegisterRequest = { cluster: input.cluster, token: input.token, csrPem: input.csrPem };
    const response = await unary<relay.v1.IRegisterRequest, relay.v1.IRegisterResponse>(
      client,
      method,
      request,
      input.timeoutMs,
    );
    return issued(response);
  } finally {
    client.close();
  }
}

/** Relay.Renew over an existing mTLS client. Rejects with the gRPC error. */
export async function renewCertificate(client: Client, csrPem: string, timeoutMs: number): Promise<IssuedCertificate> {
  const response = await unary<relay.v1.IRenewRequest, relay.v1.IRenewResponse>(
    client,
    RELAY_SERVICE.renew,
    { csrPem },
    timeoutMs,
  );
  return issued(response);
}

/** Relay.MeshTrust over an existing mTLS client. Rejects with the gRPC error. */
export function callMeshTrust(
  client: Client,
  request: relay.v1.IMeshTrustRequest,
  timeoutMs: number,
): Promise<relay.v1.IMeshTrustResponse> {
  return unary(client, RELAY_SERVICE.meshTrust, request, timeoutMs);
}

interface UnaryMethod<Req, Res> {
  readonly path: string;
  readonly requestSerialize: (message: Req) => Buffer;
  readonly responseDeserialize: (data: Buffer) => Res;
}

function unary<Req, Res>(client: Client, method: UnaryMethod<Req, Res>, request: Req, timeoutMs: number): Promise<Res> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      { deadline: Date.now() + timeoutMs },
      (err, value) => {
        if (err || value === undefined) reject(err ?? new Error(`${method.path} returned no response`));
        else resolve(value);
      },
    );
  });
}

function issued(response: {
  certificatePem?: string | null;
  caBundlePem?: string | null;
  notAfterUnixMs?: number | { toNumber(): number } | null;
}): IssuedCertificate {
  return {
    certificatePem: response.certificatePem ?? '',
    caBundlePem: response.caBundlePem ?? '',
    notAfterUnixMs: Number(response.notAfterUnixMs ?? 0),
  };
}
