/**
 * Schema of the admin.gloo.solo.io/v2 RootTrustPolicy spec (solo-apis gloo-mesh-v2.6.x
 * root_trust_policy.proto, CommonCertOptions from ca_options.proto). The translator does not read
 * this kind: the management server parses it (packages/registry/src/root-trust-policy.ts). It lives
 * with the other Gloo schemas so the chart's CRD is generated from the same place, and it admits the
 * values that parser admits, so a CR the API server accepts is one the management server can use.
 */
import { STRING, STRING_MAP, closedObject, listOf, type JsonSchema } from './gloo-common.ts';

/** The parser's limits: what a CR may carry is what the management server accepts. */
const ROOT_TRUST_LIMITS = {
  minRsaKeyBits: 2048,
  maxRsaKeyBits: 8192,
  // Longer than any root a mesh keeps; beyond it a typo is more likely than intent.
  maxTtlDays: 36_500,
};

/** tls.security.policy.gloo.solo.io.CommonCertOptions */
const COMMON_CERT_OPTIONS = closedObject({
  ttlDays: {
    type: 'integer',
    minimum: 1,
    maximum: ROOT_TRUST_LIMITS.maxTtlDays,
    description: "Days before the certificate expires (Gloo's default 365).",
  },
  rsaKeySizeBytes: {
    type: 'integer',
    minimum: ROOT_TRUST_LIMITS.minRsaKeyBits,
    maximum: ROOT_TRUST_LIMITS.maxRsaKeyBits,
    description: 'Size of the RSA key in bits, despite the name, as Gloo uses it (default 4096).',
  },
  orgName: {
    type: 'string',
    // Not blank: a certificate's O= of spaces only is a mistake the parser refuses too.
    pattern: '\\S',
    description: 'Organization (O=) of the certificate.',
  },
  secretRotationGracePeriodRatio: {
    type: 'number',
    exclusiveMinimum: 0,
    exclusiveMaximum: 1,
    description: 'Share of the lifetime before expiry in which the certificate is renewed, 0 < ratio < 1.',
  },
});

/** core.skv2.solo.io.ObjectRef: the operator's root CA Secret (tls.crt/tls.key or ca.crt/ca.key). */
const SECRET_REF = closedObject(
  {
    name: { type: 'string', minLength: 1 },
    namespace: { type: 'string', minLength: 1, description: "Default: the RootTrustPolicy's namespace." },
  },
  { required: ['name'] },
);

/** MgmtServerCertificateAuthority: a oneof of generated and secretRef. */
const MGMT_SERVER_CA = closedObject(
  { generated: COMMON_CERT_OPTIONS, secretRef: SECRET_REF },
  { not: { required: ['generated', 'secretRef'] } },
);

/** common.gloo.solo.io.MeshSelector */
const MESH_SELECTOR = closedObject({
  istio: closedObject({ revision: STRING, namespace: STRING, clusterSelector: STRING_MAP, selector: STRING_MAP }),
});

export const ROOT_TRUST_POLICY_SPEC: JsonSchema = closedObject({
  applyToMeshes: {
    ...listOf(MESH_SELECTOR),
    description: 'Accepted as Gloo allows it; one RootTrustPolicy applies to every cluster of the management plane.',
  },
  config: closedObject({
    mgmtServerCa: MGMT_SERVER_CA,
    // The two unsupported fields are declared so the API server keeps them and the management server
    // refuses the policy naming them; pruned, the policy would silently mean something else.
    agentCa: {
      type: 'object',
      description: 'Not supported: a RootTrustPolicy that sets it is refused (use mgmtServerCa).',
    },
    intermediateCertOptions: COMMON_CERT_OPTIONS,
    autoRestartPods: { type: 'boolean' },
    passiveCertificateAuthorities: {
      ...listOf({ type: 'object' }),
      description: 'Not supported: a RootTrustPolicy that sets it is refused.',
    },
  }),
});
