import { allocateVips, createIstioValidator, translate, virtualDestinationKeys } from '@meshrelay/translator';
import { tierS } from './workload.ts';
let t = performance.now();
const w = tierS();
console.log('gen ms', performance.now() - t, w.counts);
t = performance.now();
const validator = createIstioValidator();
const vips = allocateVips(new Map(), virtualDestinationKeys(w.inputs));
console.log('setup ms', performance.now() - t);
for (let i = 0; i < 3; i++) {
  t = performance.now();
  const r = translate({ inputs: w.inputs, clusters: w.clusters, vips }, validator);
  console.log('translate ms', performance.now() - t, r.outputs.size, r.problems.length, r.problems.slice(0, 5));
  if (i === 2) { const o = r.outputs.get('cluster-3')!; console.log(o.resources.length, o.bytes, [...new Set(o.resources.map(x=>x.kind))]); console.log(JSON.stringify(o.resources.find(x=>x.kind==='ServiceEntry'), null, 1).slice(0, 3000)); }
}
