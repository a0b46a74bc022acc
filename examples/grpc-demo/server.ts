/**
 * One cluster's greeter: a plain @grpc/grpc-js server that answers Hello with its cluster and
 * address. `node examples/grpc-demo/server.ts <cluster>` binds the address and port that the
 * cluster's manifests register (see GREETERS) and prints `greeter listening <address>:<port>`.
 */
import * as grpc from '@grpc/grpc-js';
import { GREETERS, GREETER_SERVICE, type Greeting } from './greeter.ts';

const cluster = process.argv[2] ?? '';
const where = GREETERS[cluster];
if (where === undefined) {
  process.stderr.write(
    `usage: server.ts <cluster>; cluster must be one of ${Object.keys(GREETERS).join(', ')}, not "${cluster}"\n`,
  );
  process.exit(2);
}
const greeting: Greeting = { cluster, address: `${where.address}:${where.port}` };

const server = new grpc.Server();
server.addService(GREETER_SERVICE, {
  Hello: (_call: grpc.ServerUnaryCall<unknown, Greeting>, callback: grpc.sendUnaryData<Greeting>) =>
    callback(null, greeting),
});
server.bindAsync(greeting.address, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    process.stderr.write(`greeter cannot listen on ${greeting.address}: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`greeter listening ${greeting.address}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.on(signal, () => server.tryShutdown(() => process.exit(0)));
