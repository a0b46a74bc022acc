import { Client, credentials } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, type relay } from '@meshrelay/api';
import { createCsr, generateKeyPair } from '@meshrelay/certs';

export interface PressureIdentity {
  readonly keyPem: string;
  readonly certPem: string;
  readonly caPem: string;
}

/** Registration.Register over server-only TLS, as an agent does it. */
export function registerWithToken(
  address: string,
  caPem: string,
  cluster: string,
  token: string,
): Promise<PressureIdentity> {
  const keys = generateKeyPair();
  const client = new Client(address, credentials.createSsl(Buffer.from(caPem)));
  const m = REGISTRATION_SERVICE.register;
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      { cluster, token, csrPem: createCsr({ ...keys, cluster }) },
      (err, res?: relay.v1.IRegisterResponse) => {
        client.close();
        if (err || !res) reject(err ?? new Error('no response'));
        else resolve({ keyPem: keys.privateKeyPem, certPem: res.certificatePem ?? '', caPem });
      },
    );
  });
}
