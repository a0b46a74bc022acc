/**
 * A real proxyless gRPC server process: an `XdsServer` with `XdsServerCredentials` answering
 * `Who/Ask` with its identity. Its Listener (TLS, RBAC) comes from the xDS server named in
 * GRPC_XDS_BOOTSTRAP_CONFIG, its certificates from the bootstrap's certificate providers. Run as
 * `node e2e/xds/xds-backend.ts '<identity JSON>' <port>`; it prints `backend listening <address>:<port>`
 * once the Listener arrived and it serves. SIGTERM stops it. RBAC needs GRPC_XDS_EXPERIMENTAL_RBAC=true.
 */
import * as grpc from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { WHO_SERVICE, type Identity } from './who.ts';

const identity = JSON.parse(process.argv[2] ?? '{}') as Identity;
const port = Number(process.argv[3]);
if (!identity.address || !Number.isInteger(port) || port <= 0) {
  console.error('usage: xds-backend.ts <identity JSON with cluster, version, locality, address> <port>');
  process.exit(2);
}

xds.register();
const server = new xds.XdsServer();
server.addService(WHO_SERVICE, {
  Ask: (_call: grpc.ServerUnaryCall<unknown, Identity>, callback: grpc.sendUnaryData<Identity>) =>
    callback(null, identity),
});
// Without a Listener carrying a TLS context the fallback (plaintext) credentials are used.
const credentials = new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure());
server.bindAsync(`${identity.address}:${port}`, credentials, (err, bound) => {
  if (err) {
    console.error(`backend cannot bind ${identity.address}:${port}: ${err.message}`);
    process.exit(1);
  }
  console.log(`backend listening ${identity.address}:${bound}`);
});
process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
