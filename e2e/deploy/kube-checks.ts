// Checks that rendered objects are valid Kubernetes objects: the API's own schemas (kubernetes-models)
// plus the rules those schemas leave to the API server (names, port ranges, env entries, references
// between a pod's probes, ports and volumes, and between Services and the pods they select).
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { PersistentVolumeClaim, Service, ServiceAccount } from 'kubernetes-models/v1';
import type { KubeObject } from './helm-runner.ts';

type Json = Record<string, unknown>;

const DNS_1123_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_1035_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const IANA_SVC_NAME = /^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

interface Validatable {
  validate(): void;
}
// Rendered objects are untyped until validate() has checked them, hence the casts.
const MODELS: Record<string, (data: Json) => Validatable> = {
  'apps/v1/Deployment': (d) => new Deployment(d as never),
  'apps/v1/StatefulSet': (d) => new StatefulSet(d as never),
  'v1/Service': (d) => new Service(d as never),
  'v1/ServiceAccount': (d) => new ServiceAccount(d as never),
  'v1/PersistentVolumeClaim': (d) => new PersistentVolumeClaim(d as never),
  'policy/v1/PodDisruptionBudget': (d) => new PodDisruptionBudget(d as never),
  'networking.k8s.io/v1/NetworkPolicy': (d) => new NetworkPolicy(d as never),
  'rbac.authorization.k8s.io/v1/Role': (d) => new Role(d as never),
  'rbac.authorization.k8s.io/v1/RoleBinding': (d) => new RoleBinding(d as never),
  'rbac.authorization.k8s.io/v1/ClusterRole': (d) => new ClusterRole(d as never),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': (d) => new ClusterRoleBinding(d as never),
  'apiextensions.k8s.io/v1/CustomResourceDefinition': (d) => new CustomResourceDefinition(d as never),
};
/** Kinds without a model here, checked by the generic rules only. */
const UNMODELLED = new Set(['monitoring.coreos.com/v1/ServiceMonitor']);
const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'Namespace']);

function rec(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}
function list(value: unknown): Json[] {
  return Array.isArray(value) ? value.map(rec) : [];
}

/** Every problem found in these objects, as "Kind/name: what" lines; empty when all are valid. */
export function kubeProblems(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  for (const obj of objects) {
    const id = `${String(obj.kind)}/${String(obj.metadata?.name)}`;
    const say = (what: string) => problems.push(`${id}: ${what}`);
    checkMeta(obj, say);
    const model = MODELS[`${obj.apiVersion}/${obj.kind}`];
    if (model) {
      try {
        model(obj).validate();
      } catch (err) {
        say(`schema: ${(err as Error).message}`);
      }
    } else if (!UNMODELLED.has(`${obj.apiVersion}/${obj.kind}`)) {
      say(`unexpected kind ${obj.apiVersion} ${obj.kind}`);
    }
    const pod = podSpecOf(obj);
    if (pod) checkPod(pod, say);
    if (obj.kind === 'Service') checkService(obj, objects, say);
  }
  return problems;
}

function checkMeta(obj: KubeObject, say: (what: string) => void): void {
  if (typeof obj.apiVersion !== 'string' || obj.apiVersion === '') say('apiVersion is missing');
  if (typeof obj.kind !== 'string' || obj.kind === '') say('kind is missing');
  const name = obj.metadata?.name;
  const nameRule = obj.kind === 'Service' ? DNS_1035_LABEL : DNS_1123_SUBDOMAIN;
  if (typeof name !== 'string' || !nameRule.test(name))
    say(
      `metadata.name "${String(name)}" is not a valid ${obj.kind === 'Service' ? 'DNS-1035 label' : 'DNS-1123 subdomain'}`,
    );
  const namespaced = !CLUSTER_SCOPED.has(obj.kind);
  if (namespaced && !DNS_1123_LABEL.test(obj.metadata?.namespace ?? ''))
    say('metadata.namespace is missing or invalid');
  if (!namespaced && obj.metadata?.namespace !== undefined) say('a cluster-scoped object has metadata.namespace');
  for (const [key, value] of Object.entries(obj.metadata?.labels ?? {})) {
    if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value))
      say(`label ${key}="${String(value)}" is not a valid label value`);
  }
}

/** The pod spec of a workload, or undefined for other kinds. */
export function podSpecOf(obj: KubeObject): Json | undefined {
  if (obj.kind !== 'Deployment' && obj.kind !== 'StatefulSet') return undefined;
  return rec(rec(rec(obj['spec'])['template'])['spec']);
}

function checkPod(pod: Json, say: (what: string) => void): void {
  const volumes = new Set(list(pod['volumes']).map((v) => v['name']));
  for (const container of [...list(pod['initContainers']), ...list(pod['containers'])]) {
    const where = `container ${String(container['name'])}`;
    if (!DNS_1123_LABEL.test(String(container['name']))) say(`${where}: name is not a DNS-1123 label`);
    const image = String(container['image'] ?? '');
    if (!/^[^:@\s]+(:[\w][\w.-]{0,127})(@sha256:[0-9a-f]{64})?$/.test(image) || image.endsWith(':latest'))
      say(`${where}: image "${image}" needs an explicit tag other than latest`);
    const portNames = new Set<unknown>();
    for (const port of list(container['ports'])) {
      const number = port['containerPort'];
      if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > 65535)
        say(`${where}: containerPort ${String(number)} is outside 1-65535`);
      if (port['name'] !== undefined) {
        if (!IANA_SVC_NAME.test(String(port['name'])))
          say(`${where}: port name "${String(port['name'])}" is not an IANA service name`);
        if (portNames.has(port['name'])) say(`${where}: port name "${String(port['name'])}" is used twice`);
        portNames.add(port['name']);
      }
    }
    checkEnv(list(container['env']), (what) => say(`${where}: ${what}`));
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      const port = rec(rec(container[probe])['httpGet'])['port'] ?? rec(rec(container[probe])['tcpSocket'])['port'];
      if (typeof port === 'string' && !portNames.has(port))
        say(`${where}: ${probe} uses port "${port}" that the container does not declare`);
    }
    for (const mount of list(container['volumeMounts'])) {
      if (!volumes.has(mount['name'])) say(`${where}: volumeMount "${String(mount['name'])}" has no volume`);
    }
  }
}

function checkEnv(env: readonly Json[], say: (what: string) => void): void {
  const seen = new Set<string>();
  for (const entry of env) {
    const name = entry['name'];
    if (typeof name !== 'string' || !ENV_NAME.test(name)) {
      say(`env entry without a valid name: ${JSON.stringify(entry)}`);
      continue;
    }
    if (seen.has(name)) say(`env ${name} is set twice`);
    seen.add(name);
    const hasValue = 'value' in entry;
    const hasFrom = 'valueFrom' in entry;
    if (hasValue === hasFrom) say(`env ${name} needs exactly one of value and valueFrom`);
    if (hasValue && typeof entry['value'] !== 'string') say(`env ${name} value is not a string`);
  }
}

/** A Service must select the pods of a rendered workload, and its named target ports must exist there. */
function checkService(service: KubeObject, objects: readonly KubeObject[], say: (what: string) => void): void {
  const spec = rec(service['spec']);
  const selector = rec(spec['selector']) as Record<string, string>;
  const pods = objects.filter((o) => {
    const labels = rec(rec(rec(rec(o['spec'])['template'])['metadata'])['labels']);
    return podSpecOf(o) !== undefined && Object.entries(selector).every(([k, v]) => labels[k] === v);
  });
  if (Object.keys(selector).length === 0 || pods.length === 0) {
    say('selects no rendered pods');
    return;
  }
  const declared = new Set(
    pods.flatMap((o) => list(podSpecOf(o)?.['containers']).flatMap((c) => list(c['ports']).map((p) => p['name']))),
  );
  for (const port of list(spec['ports'])) {
    const number = port['port'];
    if (typeof number !== 'number' || number < 1 || number > 65535) say(`port ${String(number)} is outside 1-65535`);
    if (typeof port['targetPort'] === 'string' && !declared.has(port['targetPort']))
      say(`targetPort "${port['targetPort']}" is not a port of the selected pods`);
  }
}

/** The env of the named container as name → value (valueFrom entries map to their JSON). */
export function containerEnv(workload: KubeObject, container: string): Map<string, string> {
  const found = list(podSpecOf(workload)?.['containers']).find((c) => c['name'] === container);
  if (!found) throw new Error(`${workload.kind}/${workload.metadata.name} has no container "${container}"`);
  return new Map(
    list(found['env']).map((e) => [
      String(e['name']),
      'value' in e ? String(e['value']) : JSON.stringify(e['valueFrom']),
    ]),
  );
}

export function firstContainer(workload: KubeObject): Json {
  const container = list(podSpecOf(workload)?.['containers'])[0];
  if (!container) throw new Error(`${workload.kind}/${workload.metadata.name} has no container`);
  return container;
}

/** A rendered object's spec. */
export function specOf(obj: KubeObject): Json {
  return rec(obj['spec']);
}

/** The labels of a workload's pod template. */
export function podTemplateLabels(workload: KubeObject): Json {
  return rec(rec(rec(rec(workload['spec'])['template'])['metadata'])['labels']);
}

/** The names of a workload's pod volumes. */
export function volumeNames(workload: KubeObject): unknown[] {
  return list(podSpecOf(workload)?.['volumes']).map((v) => v['name']);
}

/** The verbs these RBAC rules grant on group/resource, sorted. */
export function rbacVerbs(rules: readonly Json[], group: string, resource: string): string[] {
  return rules
    .filter((r) => (r['apiGroups'] as string[]).includes(group) && (r['resources'] as string[]).includes(resource))
    .flatMap((r) => r['verbs'] as string[])
    .sort();
}

export { list as asList, rec as asRecord };
