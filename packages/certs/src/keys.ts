import { generateKeyPair as generateKeyPairCallback, generateKeyPairSync } from 'node:crypto';
import { promisify } from 'node:util';

/** An RSA key pair in PEM: PKCS#8 private key, SPKI public key. */
export interface KeyPair {
  readonly privateKeyPem: string;
  readonly publicKeyPem: string;
}

const RSA_OPTIONS = {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
} as const;

const generateRsaAsync = promisify(generateKeyPairCallback);

/**
 * Generates an RSA-2048 key pair with node:crypto (OpenSSL; forge's pure-JS keygen is far slower).
 * Blocks the event loop for about 150 ms: servers use generateKeyPairAsync.
 */
export function generateKeyPair(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', RSA_OPTIONS);
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

/** Same as generateKeyPair, computed on the libuv thread pool so the event loop keeps running. */
export async function generateKeyPairAsync(): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateRsaAsync('rsa', RSA_OPTIONS);
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}
