import type { ServiceDefinition } from '@grpc/grpc-js';
import { relay } from './gen/relay.js';

/**
 * grpc-js service definitions for proto/relay/v1/relay.proto, built on the
 * protobufjs static code so server and agent share one encoding.
 */
interface Codec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(data: Uint8Array): T;
  fromObject(object: Record<string, unknown>): T;
}

function method<Req, Res>(
  path: string,
  req: Codec<Req>,
  res: Codec<Res>,
  requestStream: boolean,
  responseStream: boolean,
) {
  return {
    path,
    requestStream,
    responseStream,
    originalName: path.slice(path.lastIndexOf('/') + 1),
    requestSerialize: (message: Req) =>
      Buffer.from(req.encode(req.fromObject(message as Record<string, unknown>)).finish()),
    requestDeserialize: (data: Buffer) => req.decode(data),
    responseSerialize: (message: Res) =>
      Buffer.from(res.encode(res.fromObject(message as Record<string, unknown>)).finish()),
    responseDeserialize: (data: Buffer) => res.decode(data),
  };
}

const v1 = relay.v1;

export const REGISTRATION_SERVICE = {
  register: method<relay.v1.IRegisterRequest, relay.v1.IRegisterResponse>(
    '/relay.v1.Registration/Register',
    v1.RegisterRequest,
    v1.RegisterResponse,
    false,
    false,
  ),
} satisfies ServiceDefinition;

export const RELAY_SERVICE = {
  push: method<relay.v1.IPushRequest, relay.v1.IPushResponse>(
    '/relay.v1.Relay/Push',
    v1.PushRequest,
    v1.PushResponse,
    true,
    true,
  ),
  pull: method<relay.v1.IPullRequest, relay.v1.IPullResponse>(
    '/relay.v1.Relay/Pull',
    v1.PullRequest,
    v1.PullResponse,
    true,
    true,
  ),
  renew: method<relay.v1.IRenewRequest, relay.v1.IRenewResponse>(
    '/relay.v1.Relay/Renew',
    v1.RenewRequest,
    v1.RenewResponse,
    false,
    false,
  ),
  meshTrust: method<relay.v1.IMeshTrustRequest, relay.v1.IMeshTrustResponse>(
    '/relay.v1.Relay/MeshTrust',
    v1.MeshTrustRequest,
    v1.MeshTrustResponse,
    false,
    false,
  ),
} satisfies ServiceDefinition;
