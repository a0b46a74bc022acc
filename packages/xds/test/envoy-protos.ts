/** Envoy's protos as @grpc/grpc-js-xds ships them, loaded with protobufjs for the tests that check resources. */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';

const DEPS = join(dirname(createRequire(import.meta.url).resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const PROTOBUFJS = dirname(createRequire(import.meta.url).resolve('protobufjs/package.json'));
// google/protobuf/descriptor.proto (for options) comes with protobufjs, not with grpc-js-xds.
const INCLUDE = [...['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) => join(DEPS, d)), PROTOBUFJS];

/** A resolved root of `files` (paths under Envoy's API), field names as written (snake_case). */
export function loadEnvoyRoot(files: readonly string[]): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) =>
    (target.startsWith('/') ? target : undefined) ??
    INCLUDE.map((d) => join(d, target)).find((p) => existsSync(p)) ??
    target;
  root.loadSync([...files], { keepCase: true });
  root.resolveAll();
  return root;
}
