import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import { MeshrelayError, isValidClusterName, toMeshrelayError, type relay } from '@meshrelay/api';
import { signClientCsr } from '@meshrelay/certs';
import { hashToken, revokedBefore } from '@meshrelay/registry';
import type { FailureRateLimiter } from '../rate-limiter.ts';
import { authenticatePeer } from './peer-identity.ts';
import { grpcStatusError, type RelayContext } from './relay-context.ts';
import { sourceAddressOf, type SourceAddress } from './source-address.ts';
import { reportTokenClaim } from './token-reuse.ts';
import { publicKeyDigest, type TokenBindings } from './token-bindings.ts';

const MAX_CSR_BYTES = 16 * 1024;
const MAX_TOKEN_BYTES = 512;

/**
 * A network holds several machines (and a NAT several agents), so it may fail this many times the
 * failures one address may before the whole network waits.
 */
export const NETWORK_FAILURES_PER_SOURCE_FAILURE = 4;

/** The registration limiter, how many failures a source address may have, and the token bindings. */
export interface RegistrationLimits {
  readonly limiter: FailureRateLimiter;
  readonly maxFailuresPerSource: number;
  /** A token registers one key; absent, a token registers any number of keys. */
  readonly bindings?: TokenBindings;
}

function reply<T>(ctx: RelayContext, callback: sendUnaryData<T>, work: () => Promise<T>, what: string): void {
  work().then(
    (response) => callback(null, response),
    (err: unknown) => {
      const e = toMeshrelayError(err);
      ctx.logger.warn({ code: e.code, reason: e.message }, `${what} refused`);
      callback(grpcStatusError(e.grpcStatus, `${e.code}: ${e.message}`));
    },
  );
}

/**
 * Registration.Register over server-only TLS: token + CSR in, client certificate
 * out. Failures are counted per source address and per source network (/24, /64);
 * past either limit the caller gets RESOURCE_EXHAUSTED until the window passes,
 * whatever it sends. They are not counted per cluster: then anyone who reaches the
 * port could lock a cluster's own agent out by sending wrong tokens in its name,
 * and a token of 32 random bytes needs no per-cluster limit against guessing. The
 * attempt is admitted and counted in one step before any await, so concurrent
 * attempts cannot overrun the limit. A malformed cluster name is never echoed back
 * (message or log): it is attacker-chosen and may be large.
 */
export function handleRegister(
  ctx: RelayContext,
  limits: RegistrationLimits,
  call: ServerUnaryCall<relay.v1.RegisterRequest, relay.v1.IRegisterResponse>,
  callback: sendUnaryData<relay.v1.IRegisterResponse>,
): void {
  reply(
    ctx,
    callback,
    async () => {
      const nameOk = isValidClusterName(call.request.cluster ?? '');
      const source = sourceAddressOf(call.getPeer());
      const decision = limits.limiter.tryAttempt(
        [
          { key: `source:${source.host}`, maxFailures: limits.maxFailuresPerSource },
          {
            key: `network:${source.network}`,
            maxFailures: limits.maxFailuresPerSource * NETWORK_FAILURES_PER_SOURCE_FAILURE,
          },
        ],
        ctx.now().getTime(),
      );
      if (!decision.admitted) {
        throw new MeshrelayError(
          'MESHRELAY_ERR_RATE_LIMITED',
          `too many failed registration attempts; retry in ${Math.ceil(decision.retryAfterMs / 1000)} s`,
        );
      }
      // Every refusal counts against the source, a second key for a used token included.
      let refused = true;
      try {
        const answer = await register(ctx, limits.bindings, call.request, nameOk, source);
        refused = false;
        return answer;
      } finally {
        if (refused) decision.attempt.fail();
        else decision.attempt.succeed();
      }
    },
    'registration',
  );
}

/**
 * Checks the token, signs the CSR and binds the token to the certificate's key: a token that
 * registered another key before is refused with MESHRELAY_ERR_TOKEN_REUSED (the certificate just
 * signed is dropped, never sent) and the reuse is reported on the cluster.
 */
async function register(
  ctx: RelayContext,
  bindings: TokenBindings | undefined,
  request: relay.v1.RegisterRequest,
  nameOk: boolean,
  source: SourceAddress,
): Promise<relay.v1.IRegisterResponse> {
  const { cluster = '', token = '', csrPem = '' } = request;
  checkRegisterRequest(cluster, nameOk, token, csrPem);
  const record = await ctx.registry.verifyToken(cluster, token);
  const now = ctx.now();
  const signed = signClientCsr(ctx.ca, csrPem, {
    cluster,
    trustDomain: ctx.trustDomain,
    uid: record.metadata.uid,
    lifetimeSeconds: ctx.clientCertLifetimeSeconds,
    now,
    notBeforeAtLeast: revokedBefore(record),
  });
  if (bindings) {
    const presented = {
      token: hashToken(token),
      key: publicKeyDigest(signed.certPem),
      boundAt: now.toISOString(),
      network: source.network,
    };
    await reportTokenClaim(ctx, record, presented, await bindings.claim(cluster, presented));
  }
  ctx.logger.info({ cluster, serial: signed.serial, notAfter: signed.notAfter }, 'cluster registered its relay agent');
  return { certificatePem: signed.certPem, caBundlePem: ctx.ca.certPem, notAfterUnixMs: signed.notAfter.getTime() };
}

function checkRegisterRequest(cluster: string, nameOk: boolean, token: string, csrPem: string): void {
  if (cluster === '' || token === '' || csrPem === '') {
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'cluster, token and csrPem are all required');
  }
  if (!nameOk) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `cluster name (${Buffer.byteLength(cluster)} bytes) is not a DNS-1123 label: lowercase letters, digits and "-", at most 63`,
    );
  }
  if (token.length > MAX_TOKEN_BYTES || csrPem.length > MAX_CSR_BYTES) {
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'token or CSR is larger than allowed');
  }
}

/** Relay.Renew over mTLS: a fresh certificate for the caller's own cluster (from its current certificate). */
export function handleRenew(
  ctx: RelayContext,
  call: ServerUnaryCall<relay.v1.RenewRequest, relay.v1.IRenewResponse>,
  callback: sendUnaryData<relay.v1.IRenewResponse>,
): void {
  reply(
    ctx,
    callback,
    async () => {
      const identity = authenticatePeer(call, ctx.ca, ctx.registry, ctx.now());
      const csrPem = call.request.csrPem ?? '';
      if (csrPem === '' || csrPem.length > MAX_CSR_BYTES)
        throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'csrPem is missing or too large');
      const signed = signClientCsr(ctx.ca, csrPem, {
        cluster: identity.cluster,
        trustDomain: ctx.trustDomain,
        uid: identity.uid,
        lifetimeSeconds: ctx.clientCertLifetimeSeconds,
        now: ctx.now(),
        notBeforeAtLeast: revokedBefore(identity.record),
      });
      ctx.logger.info({ cluster: identity.cluster, serial: signed.serial }, 'client certificate renewed');
      return { certificatePem: signed.certPem, caBundlePem: ctx.ca.certPem, notAfterUnixMs: signed.notAfter.getTime() };
    },
    'renew',
  );
}
