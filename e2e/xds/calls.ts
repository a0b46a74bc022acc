/**
 * The calls a test client makes, shared by client.ts (one process per run) and caller.ts (one
 * process serving many runs): sequential unary Who calls, counted per backend identity, failures
 * per gRPC status code.
 */
import * as grpc from '@grpc/grpc-js';
import { WHO_PATH, identityKey, type Identity } from './who.ts';

export interface Picks {
  readonly counts: Record<string, number>;
  readonly errors: Record<string, number>;
}

/** Metadata from `name=value` headers. */
export function metadataOf(headers: Readonly<Record<string, string>>): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [name, value] of Object.entries(headers)) metadata.set(name, value);
  return metadata;
}

const encode = (): Buffer => Buffer.from('{}');
const decode = (bytes: Buffer): Identity => JSON.parse(bytes.toString('utf8')) as Identity;

/** One call with its own deadline: the identity of the backend that answered, or the status code. */
export function ask(
  client: grpc.Client,
  metadata: grpc.Metadata,
  deadlineMs: number,
): Promise<{ key: string } | { code: number }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(WHO_PATH, encode, decode, {}, metadata, { deadline: Date.now() + deadlineMs }, (err, res) =>
      resolve(err || !res ? { code: err?.code ?? -1 } : { key: identityKey(res) }),
    );
  });
}

/** Adds one call's outcome to running totals. */
export function tally(
  picks: { counts: Record<string, number>; errors: Record<string, number> },
  r: { key: string } | { code: number },
): void {
  if ('key' in r) picks.counts[r.key] = (picks.counts[r.key] ?? 0) + 1;
  else picks.errors[String(r.code)] = (picks.errors[String(r.code)] ?? 0) + 1;
}
