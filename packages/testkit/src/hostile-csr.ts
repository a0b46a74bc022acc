/**
 * CSRs an attacker would send. `csrWithPublicKey` carries an arbitrary RSA public key (modulus
 * and exponent chosen by the caller, no private key behind it) and a random signature of the
 * modulus' size: a pure-JS verifier then spends CPU in proportion to exponent bits × modulus
 * bits², minutes for a few kilobytes. `csrWithPublicExponent` keeps a real 2048-bit key and
 * replaces only its exponent.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

function bigInteger(value: bigint): forge.jsbn.BigInteger {
  return new forge.jsbn.BigInteger(value.toString(16), 16);
}

/** A PEM CSR with CN = cluster for the public key (modulus, exponent) and a random signature. */
export function csrWithPublicKey(cluster: string, modulus: bigint, exponent: bigint): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signer = forge.pki.privateKeyFromPem(
    privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  ) as forge.pki.rsa.PrivateKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.setRsaPublicKey(bigInteger(modulus), bigInteger(exponent));
  csr.setSubject([{ name: 'commonName', value: cluster }]);
  csr.sign(signer, forge.md.sha256.create());
  const size = Math.ceil(modulus.toString(16).length / 2);
  const signature = randomBytes(size);
  signature[0] = 0x01;
  (csr as unknown as { signature: string }).signature = signature.toString('binary');
  return forge.pki.certificationRequestToPem(csr);
}

/** A PEM CSR with CN = cluster for a real 2048-bit RSA key whose public exponent is replaced. */
export function csrWithPublicExponent(cluster: string, exponent: bigint): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = forge.pki.privateKeyFromPem(
    privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  ) as forge.pki.rsa.PrivateKey;
  return csrWithPublicKey(cluster, BigInt(`0x${key.n.toString(16)}`), exponent);
}

/** A number of `bits` bits with every bit set (odd, top bit set): a worst case for modular exponentiation. */
export function allOnes(bits: number): bigint {
  return (1n << BigInt(bits)) - 1n;
}
