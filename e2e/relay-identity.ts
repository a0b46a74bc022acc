// Relay calls as an agent makes them, against server processes of a Mesh: Register over
// server-only TLS, mTLS clients with the issued certificate, and Renew.
import type { TestContext } from 'node:test';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, RELAY_SERVICE, type relay } from '@meshrelay/api';
import { createCsr, generateKeyPair } from '@meshrelay/certs';
import type { ServerProc } from './mesh.ts';

export interface RelayIdentity {
  readonly cluster: string;
  readonly keyPem: string;
  readonly certPem: string;
}

function target(server: ServerProc): string {
  return `localhost:${server.relayPort}`;
}

function unary<Req, Res>(
  client: Client,
  method: typeof REGISTRATION_SERVICE.register | typeof RELAY_SERVICE.renew,
  request: Req,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      method.path,
      method.requestSerialize as (r: Req) => Buffer,
      method.responseDeserialize as (b: Buffer) => Res,
      request,
      (err: ServiceError | null, res?: Res) => (err ? reject(err) : resolve(res as Res)),
    );
  });
}

/** Registers `cluster` with `token` at `server` and returns the issued identity. */
export async function registerAt(
  server: ServerProc,
  caPem: string,
  cluster: string,
  token: string,
): Promise<RelayIdentity> {
  const keys = generateKeyPair();
  const client = new Client(target(server), credentials.createSsl(Buffer.from(caPem)));
  try {
    const res = await unary<relay.v1.IRegisterRequest, relay.v1.IRegisterResponse>(
      client,
      REGISTRATION_SERVICE.register,
      {
        cluster,
        token,
        csrPem: createCsr({ ...keys, cluster }),
      },
    );
    return { cluster, keyPem: keys.privateKeyPem, certPem: res.certificatePem ?? '' };
  } finally {
    client.close();
  }
}

/** An mTLS client of `server` presenting `id`; closed after the test. */
export function mtlsClientOf(t: TestContext, server: ServerProc, caPem: string, id: RelayIdentity): Client {
  const client = new Client(
    target(server),
    credentials.createSsl(Buffer.from(caPem), Buffer.from(id.keyPem), Buffer.from(id.certPem)),
  );
  t.after(() => client.close());
  return client;
}

/** Relay.Renew over `client` (its certificate is the one being renewed). */
export function renewOver(client: Client, cluster: string): Promise<relay.v1.IRenewResponse> {
  return unary<relay.v1.IRenewRequest, relay.v1.IRenewResponse>(client, RELAY_SERVICE.renew, {
    csrPem: createCsr({ ...generateKeyPair(), cluster }),
  });
}
