import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A relay identity token: 32 random bytes, base64url, with a recognisable prefix. */
export const TOKEN_PREFIX = 'mrt_';

export interface StoredToken {
  readonly sha256: string;
  readonly expiresAt: string;
}

export interface TokenRecord {
  readonly current: StoredToken;
  /** The token replaced by the last rotation, valid until its own expiry or the overlap end. */
  readonly previous?: StoredToken;
}

export function newToken(random: (size: number) => Buffer = randomBytes): string {
  return TOKEN_PREFIX + random(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Constant-time check of a presented token against the stored hashes; expired entries never match. */
export function tokenMatches(record: TokenRecord, token: string, now: Date): boolean {
  const presented = Buffer.from(hashToken(token), 'hex');
  let ok = false;
  for (const stored of [record.current, record.previous]) {
    if (!stored) continue;
    const same = timingSafeEqual(presented, Buffer.from(stored.sha256, 'hex'));
    // Evaluate both entries regardless of the first result to keep timing flat.
    ok = (same && Date.parse(stored.expiresAt) > now.getTime()) || ok;
  }
  return ok;
}

export interface IssuedToken {
  /** The token in clear: shown once, never stored. */
  readonly token: string;
  readonly expiresAt: Date;
  readonly record: TokenRecord;
}

/**
 * Issues a new token and the record to store for it. The current token of `existing` (if any)
 * becomes `previous`, valid until the earlier of its own expiry and `now + overlapSeconds`.
 */
export function issueToken(
  now: Date,
  ttlSeconds: number,
  overlapSeconds: number,
  existing: TokenRecord | undefined,
): IssuedToken {
  const token = newToken();
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  let previous = existing?.current;
  if (previous) {
    const overlapEnd = new Date(now.getTime() + overlapSeconds * 1000).toISOString();
    previous = {
      sha256: previous.sha256,
      expiresAt: previous.expiresAt < overlapEnd ? previous.expiresAt : overlapEnd,
    };
  }
  const record: TokenRecord = {
    current: { sha256: hashToken(token), expiresAt: expiresAt.toISOString() },
    ...(previous ? { previous } : {}),
  };
  return { token, expiresAt, record };
}
