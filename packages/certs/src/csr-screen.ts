// Screens a PKCS#10 CSR before anything else reads it: the key is checked with node:crypto
// (native code) for RSA, exponent 65537 and 2048–4096 bits, then the CSR's signature is verified
// with node:crypto too. node-forge's pure-JS big-number arithmetic never sees an unchecked key:
// a huge public exponent made its signature check run for minutes on the event loop.

import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { MeshrelayError } from '@meshrelay/api';

export const MIN_RSA_BITS = 2048;
export const MAX_RSA_BITS = 4096;
const RSA_EXPONENT = 65537n;

/** Signature algorithms accepted on a CSR (sha*WithRSAEncryption), by DER-encoded OID. */
const SIGNATURE_HASHES: ReadonlyMap<string, string> = new Map([
  ['2a864886f70d01010b', 'sha256'],
  ['2a864886f70d01010c', 'sha384'],
  ['2a864886f70d01010d', 'sha512'],
]);

interface Tlv {
  readonly tag: number;
  /** Offset of the first content byte. */
  readonly start: number;
  /** Offset just past the element. */
  readonly end: number;
}

function refuse(reason: string, cause?: unknown): MeshrelayError {
  return new MeshrelayError(
    'MESHRELAY_ERR_CERTIFICATE',
    `CSR refused: ${reason}`,
    cause === undefined ? undefined : { cause },
  );
}

/** Reads one DER element at `offset` (definite lengths only), checking its tag and that it fits in `limit`. */
function readTlv(der: Buffer, offset: number, tag: number, limit = der.length): Tlv {
  if (offset + 2 > limit || der[offset] !== tag) throw refuse('not a DER-encoded PKCS#10 request');
  let length = der[offset + 1] as number;
  let start = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 3 || start + octets > limit) throw refuse('not a DER-encoded PKCS#10 request');
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + (der[start + i] as number);
    start += octets;
  }
  if (start + length > limit) throw refuse('not a DER-encoded PKCS#10 request');
  return { tag, start, end: start + length };
}

function pemBody(csrPem: string): Buffer {
  const match =
    /-----BEGIN (?:NEW )?CERTIFICATE REQUEST-----([A-Za-z0-9+/=\s]+)-----END (?:NEW )?CERTIFICATE REQUEST-----/.exec(
      csrPem,
    );
  if (!match?.[1]) throw refuse('not a PEM "CERTIFICATE REQUEST"');
  return Buffer.from(match[1].replace(/\s+/g, ''), 'base64');
}

/** The RSA key sizes a CSR may have, in bits. */
export interface RsaBits {
  readonly min: number;
  readonly max: number;
}

function rsaKey(spkiDer: Buffer, allowed: RsaBits): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: spkiDer, format: 'der', type: 'spki' });
  } catch (err) {
    throw refuse('its public key cannot be read', err);
  }
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType !== 'rsa' || !details?.modulusLength)
    throw refuse(`key type ${key.asymmetricKeyType ?? 'unknown'}; RSA is required`);
  if (details.publicExponent !== RSA_EXPONENT) throw refuse('RSA public exponent is not 65537');
  const bits = details.modulusLength;
  if (bits < allowed.min || bits > allowed.max)
    throw refuse(`key is RSA-${bits}; RSA-${allowed.min} to RSA-${allowed.max} is required`);
  return key;
}

/**
 * Throws MESHRELAY_ERR_CERTIFICATE unless `csrPem` is one DER PKCS#10 request whose key is RSA
 * with exponent 65537 and `allowed` bits (default 2048–4096) and whose signature (sha256/384/512 with RSA) verifies
 * against that key. The key is checked before the signature. Runs in time linear in the input.
 */
export function screenCsr(csrPem: string, allowed: RsaBits = { min: MIN_RSA_BITS, max: MAX_RSA_BITS }): void {
  const der = pemBody(csrPem);
  const outer = readTlv(der, 0, 0x30);
  const info = readTlv(der, outer.start, 0x30, outer.end);
  const version = readTlv(der, info.start, 0x02, info.end);
  const subject = readTlv(der, version.end, 0x30, info.end);
  const spki = readTlv(der, subject.end, 0x30, info.end);
  const algorithm = readTlv(der, info.end, 0x30, outer.end);
  const oid = readTlv(der, algorithm.start, 0x06, algorithm.end);
  const signature = readTlv(der, algorithm.end, 0x03, outer.end);
  const key = rsaKey(der.subarray(subject.end, spki.end), allowed);
  const hash = SIGNATURE_HASHES.get(der.subarray(oid.start, oid.end).toString('hex'));
  if (!hash) throw refuse('signature algorithm is not sha256/sha384/sha512 with RSA');
  if (der[signature.start] !== 0) throw refuse('signature is not a whole number of bytes');
  const signed = der.subarray(outer.start, info.end);
  if (!verify(hash, signed, key, der.subarray(signature.start + 1, signature.end))) {
    throw refuse('signature does not verify against its own public key');
  }
}
