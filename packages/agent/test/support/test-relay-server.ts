import { Server, ServerCredentials, status, type ServerDuplexStream, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, RELAY_SERVICE, SnapshotAssembler, encodeSnapshotFramesSync, snapshotEncoding, type OutputSnapshot, type relay } from '@meshrelay/api';
import { verifyClientCertificate, type ClientIdentity } from '@meshrelay/certs';
import { issueClientCertificate, type TestPki } from './test-pki.ts';

/**
 * A small, real relay server for agent tests: gRPC over TLS on localhost:0,
 * registration with a token, Relay methods only for a client certificate issued
 * by the test CA under the current registration uid. Behaviour is switched by
 * the test (ack or not, stay silent, go-away, fence, revoke).
 */
export interface TestRelayServerOptions {
  readonly pki: TestPki;
  readonly token?: string;
  readonly clientCertLifetimeSeconds?: number;
  /** Ack every pushed snapshot as accepted (default true). */
  readonly autoAck?: boolean;
  /** Never write anything on the streams (a frozen server). */
  readonly silent?: boolean;
  /** Output sent on every Pull hello whose held hash differs. */
  readonly output?: OutputSnapshot;
}

export interface ReceivedSnapshot {
  readonly cluster: string;
  readonly epoch: string;
  readonly generation: number;
  readonly hash: string;
  readonly resources: readonly unknown[];
  readonly serial: string;
}

type PushCall = ServerDuplexStream<relay.v1.IPushRequest, relay.v1.IPushResponse>;
type PullCall = ServerDuplexStream<relay.v1.IPullRequest, relay.v1.IPullResponse>;

export class TestRelayServer {
  readonly #opts: TestRelayServerOptions;
  readonly #server = new Server();
  #port = 0;
  uid = 'uid-1';
  autoAck: boolean;
  silent: boolean;
  output: OutputSnapshot | undefined;
  readonly registrations: Array<{ cluster: string; token: string }> = [];
  readonly renewals: string[] = [];
  readonly pushed: ReceivedSnapshot[] = [];
  readonly hellos: string[] = [];
  readonly pullAcks: relay.v1.IAck[] = [];
  /** Serials of the client certificates each accepted push stream came with, in order. */
  readonly pushStreamSerials: string[] = [];
  heartbeats = 0;
  readonly pushCalls = new Set<PushCall>();
  readonly pullCalls = new Set<PullCall>();

  constructor(options: TestRelayServerOptions) {
    this.#opts = options;
    this.autoAck = options.autoAck ?? true;
    this.silent = options.silent ?? false;
    this.output = options.output;
    this.#server.addService(REGISTRATION_SERVICE, { register: (call: ServerUnaryCall<relay.v1.IRegisterRequest, relay.v1.IRegisterResponse>, cb: sendUnaryData<relay.v1.IRegisterResponse>) => this.#register(call, cb) });
    this.#server.addService(RELAY_SERVICE, {
      push: (call: PushCall) => this.#push(call),
      pull: (call: PullCall) => this.#pull(call),
      renew: (call: ServerUnaryCall<relay.v1.IRenewRequest, relay.v1.IRenewResponse>, cb: sendUnaryData<relay.v1.IRenewResponse>) => this.#renew(call, cb),
    });
  }

  get address(): string {
    return `localhost:${this.#port}`;
  }

  async start(): Promise<this> {
    const credentials = relayServerCredentials(this.#opts.pki);
    this.#port = await new Promise<number>((resolve, reject) => this.#server.bindAsync('localhost:0', credentials, (err, port) => (err ? reject(err) : resolve(port))));
    return this;
  }

  async stop(): Promise<void> {
    for (const call of [...this.pushCalls, ...this.pullCalls]) call.emit('error', { code: status.UNAVAILABLE, details: 'server stopping' });
    this.#server.forceShutdown();
  }

  /** Sends an output on every open pull stream. */
  sendOutput(output: OutputSnapshot): void {
    this.output = output;
    for (const call of this.pullCalls) writeOutput(call, output);
  }

  /** Asks every connected agent to move (on the push and the pull stream). */
  goAway(retryAfterMs: number, reason = 'draining'): void {
    for (const call of this.pushCalls) call.write({ goAway: { retryAfterMs, reason } });
    for (const call of this.pullCalls) call.write({ goAway: { retryAfterMs, reason } });
  }

  /** Ends every push stream with the given status, e.g. ABORTED MESHRELAY_ERR_FENCED. */
  failPushStreams(code: number, details: string): void {
    for (const call of this.pushCalls) call.emit('error', { code, details });
  }

  /** Acks the given snapshot on every push stream. */
  ack(hash: string, generation: number): void {
    for (const call of this.pushCalls) call.write({ ack: { hash, generation, accepted: true } });
  }

  #identity(call: { getAuthContext(): { sslPeerCertificate?: { raw?: Buffer } } }): ClientIdentity | string {
    const raw = call.getAuthContext().sslPeerCertificate?.raw;
    if (!raw) return 'MESHRELAY_ERR_UNAUTHENTICATED: no client certificate';
    try {
      const identity = verifyClientCertificate(raw, this.#opts.pki.ca, new Date());
      if (identity.uid !== this.uid) return 'MESHRELAY_ERR_UNAUTHENTICATED: certificate of an earlier registration';
      return identity;
    } catch (err) {
      return `MESHRELAY_ERR_UNAUTHENTICATED: ${(err as Error).message}`;
    }
  }

  #issue(csrPem: string, cluster: string): relay.v1.IRegisterResponse {
    const issued = issueClientCertificate(this.#opts.pki, csrPem, cluster, this.uid, this.#opts.clientCertLifetimeSeconds ?? 3600);
    return { certificatePem: issued.certPem, caBundlePem: this.#opts.pki.ca.certPem, notAfterUnixMs: issued.notAfter.getTime() };
  }

  #register(call: ServerUnaryCall<relay.v1.IRegisterRequest, relay.v1.IRegisterResponse>, cb: sendUnaryData<relay.v1.IRegisterResponse>): void {
    const { cluster = '', token = '', csrPem = '' } = call.request;
    this.registrations.push({ cluster: cluster ?? '', token: token ?? '' });
    if (token !== (this.#opts.token ?? 'good-token')) {
      cb({ code: status.UNAUTHENTICATED, details: 'MESHRELAY_ERR_TOKEN_INVALID: the relay identity token is wrong' });
      return;
    }
    cb(null, this.#issue(csrPem ?? '', cluster ?? ''));
  }

  #renew(call: ServerUnaryCall<relay.v1.IRenewRequest, relay.v1.IRenewResponse>, cb: sendUnaryData<relay.v1.IRenewResponse>): void {
    const identity = this.#identity(call);
    if (typeof identity === 'string') {
      cb({ code: status.UNAUTHENTICATED, details: identity });
      return;
    }
    this.renewals.push(identity.cluster);
    cb(null, this.#issue(call.request.csrPem ?? '', identity.cluster));
  }

  #push(call: PushCall): void {
    const identity = this.#identity(call);
    if (typeof identity === 'string') {
      call.emit('error', { code: status.UNAUTHENTICATED, details: identity });
      return;
    }
    this.pushCalls.add(call);
    this.pushStreamSerials.push(identity.serial);
    call.on('close', () => this.pushCalls.delete(call));
    call.on('error', () => this.pushCalls.delete(call));
    call.on('end', () => this.pushCalls.delete(call));
    let assembler: SnapshotAssembler | undefined;
    call.on('data', async (msg: relay.v1.IPushRequest) => {
      if (msg.heartbeat) {
        this.heartbeats++;
        if (!this.silent) call.write({ heartbeat: { sentUnixMs: Date.now() } });
      } else if (msg.header) {
        assembler = new SnapshotAssembler(msg.header, { maxBytes: 64 * 1024 * 1024, maxResources: 100_000 });
      } else if (msg.chunk && assembler?.add(msg.chunk)) {
        const done = await assembler.finish();
        assembler = undefined;
        this.pushed.push({ cluster: identity.cluster, epoch: done.epoch, generation: done.generation, hash: done.hash, resources: done.resources, serial: identity.serial });
        if (this.autoAck && !this.silent) call.write({ ack: { hash: done.hash, generation: done.generation, accepted: true } });
      }
    });
  }

  #pull(call: PullCall): void {
    const identity = this.#identity(call);
    if (typeof identity === 'string') {
      call.emit('error', { code: status.UNAUTHENTICATED, details: identity });
      return;
    }
    this.pullCalls.add(call);
    call.on('close', () => this.pullCalls.delete(call));
    call.on('error', () => this.pullCalls.delete(call));
    call.on('end', () => this.pullCalls.delete(call));
    call.on('data', (msg: relay.v1.IPullRequest) => {
      if (msg.hello) {
        this.hellos.push(msg.hello.heldHash ?? '');
        if (this.output && !this.silent && msg.hello.heldHash !== this.output.hash) writeOutput(call, this.output);
      } else if (msg.ack) {
        this.pullAcks.push(msg.ack);
      } else if (msg.heartbeat && !this.silent) {
        call.write({ heartbeat: { sentUnixMs: Date.now() } });
      }
    });
  }
}

function writeOutput(call: PullCall, output: OutputSnapshot): void {
  const frames = encodeSnapshotFramesSync({ hash: output.hash, encoding: snapshotEncoding(output), provenance: output.provenance });
  call.write({ header: frames.header });
  for (const chunk of frames.chunks) call.write({ chunk });
}

/**
 * TLS with the server certificate; client certificates are requested but not
 * required at the handshake (Register runs without one), and only verified
 * peers get an auth context.
 */
function relayServerCredentials(pki: TestPki): ServerCredentials {
  const credentials = ServerCredentials.createSsl(Buffer.from(pki.ca.certPem), [{ cert_chain: Buffer.from(pki.serverCert.certPem), private_key: Buffer.from(pki.serverCert.keyPem) }], true);
  (credentials as unknown as { serverConstructorOptions: { rejectUnauthorized?: boolean } }).serverConstructorOptions.rejectUnauthorized = false;
  return credentials;
}
