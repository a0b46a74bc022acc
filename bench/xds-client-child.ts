/**
 * A real proxyless gRPC client for the xDS bench: grpc-js-xds with its bootstrap from
 * GRPC_XDS_BOOTSTRAP_CONFIG resolves `xds:///<listener>` (LDS → RDS → CDS → EDS, ACKing each)
 * and keeps its ADS stream open until stopped. No calls are made: the bench's endpoints are
 * not real servers, and the ADS stream is what is measured. Usage: xds-client-child.ts <listener>
 */
import * as grpc from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';

const listener = process.argv[2];
if (!listener) {
  console.error('usage: xds-client-child.ts <host:port>');
  process.exit(2);
}
xds.register();
const client = new grpc.Client(`xds:///${listener}`, grpc.credentials.createInsecure());
// A call waiting for the channel to be ready starts name resolution, which opens and feeds the ADS stream.
client.waitForReady(Date.now() + 3_600_000, () => {});
console.log('resolving');
// grpc-js unrefs its timers and sockets: without this the process could end between retries.
const alive = setInterval(() => {}, 60_000);
process.on('SIGTERM', () => {
  clearInterval(alive);
  client.close();
  process.exit(0);
});
