/**
 * A real gRPC backend process: answers `Who/Ask` with its identity. Run as
 * `node e2e/xds/backend.ts '<identity JSON>' <port>`; it binds identity.address:port and prints
 * `backend listening <address>:<port>` once it serves. SIGTERM stops it.
 */
import * as grpc from '@grpc/grpc-js';
import { WHO_SERVICE, type Identity } from './who.ts';

const identity = JSON.parse(process.argv[2] ?? '{}') as Identity;
const port = Number(process.argv[3]);
if (!identity.address || !Number.isInteger(port) || port <= 0) {
  console.error('usage: backend.ts <identity JSON with cluster, version, locality, address> <port>');
  process.exit(2);
}

let served = 0;
const server = new grpc.Server();
server.addService(WHO_SERVICE, {
  // `x-sleep-ms` makes the answer late, so a route timeout can be seen to cut it.
  Ask: (call: grpc.ServerUnaryCall<unknown, Identity>, callback: grpc.sendUnaryData<Identity>) => {
    // `x-fail-every: N` fails all but every N-th call UNAVAILABLE, so retries can be seen to recover them.
    const failEvery = Number(call.metadata.get('x-fail-every')[0] ?? 0);
    if (failEvery > 0 && ++served % failEvery !== 0) {
      callback({ code: grpc.status.UNAVAILABLE, details: 'failing on purpose' });
      return;
    }
    const sleep = Number(call.metadata.get('x-sleep-ms')[0] ?? 0);
    if (sleep > 0) setTimeout(() => callback(null, identity), sleep);
    else callback(null, identity);
  },
});
server.bindAsync(`${identity.address}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    console.error(`backend cannot bind ${identity.address}:${port}: ${err.message}`);
    process.exit(1);
  }
  console.log(`backend listening ${identity.address}:${bound}`);
});
process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
