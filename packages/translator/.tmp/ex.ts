import { createIstioValidator, translate } from '../src/index.ts';
import { EXAMPLES, readManifestDir, renderResult, snapshotsOf } from '../test/support.ts';
const perCluster = new Map([['cluster-a', readManifestDir(EXAMPLES + 'cluster-a')], ['cluster-b', readManifestDir(EXAMPLES + 'cluster-b')]]);
const result = translate({ inputs: snapshotsOf(perCluster), clusters: [], vips: new Map([['bookinfo/reviews-global', '10.30.0.7']]) }, createIstioValidator());
console.log(renderResult(result));
