{{/*
The management server's environment: each value maps onto exactly one variable of
meshrelay-server (packages/mgmt-server/src/config.ts). Left at the binary's default on purpose: the
kubeconfig and its context (the pod's service account is the credential) and MESHRELAY_ADMIN_TOKEN
(the token arrives as a file from a Secret, or the server keeps its own).
*/}}
{{- define "meshrelay.mgmtServer.env" -}}
{{- $s := .Values.glooMgmtServer -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{ include "meshrelay.redisEnv" . }}
- name: MESHRELAY_RELAY_HOST
  value: {{ $s.relay.host | quote }}
- name: MESHRELAY_RELAY_PORT
  value: {{ $s.relay.port | int | quote }}
- name: MESHRELAY_HTTP_HOST
  value: {{ $s.http.host | quote }}
- name: MESHRELAY_HTTP_PORT
  value: {{ $s.http.port | int | quote }}
- name: MESHRELAY_HTTP_ALLOWED_HOSTS
  value: {{ include "meshrelay.httpAllowedHosts" . | quote }}
- name: MESHRELAY_METRICS_HOST
  value: {{ $s.metrics.host | quote }}
- name: MESHRELAY_METRICS_PORT
  value: {{ $s.metrics.port | int | quote }}
- name: MESHRELAY_REGISTRY
  value: {{ $s.registry | quote }}
- name: MESHRELAY_NAMESPACE
  value: {{ .Release.Namespace | quote }}
- name: MESHRELAY_STATE_DIR
  value: {{ $s.state.path | quote }}
- name: MESHRELAY_TRUST_DOMAIN
  value: {{ $s.relay.trustDomain | quote }}
- name: MESHRELAY_SERVER_HOSTS
  value: {{ include "meshrelay.serverHosts" . | quote }}
- name: MESHRELAY_ADVERTISE_ADDRESS
  value: {{ include "meshrelay.advertiseAddress" . | quote }}
- name: MESHRELAY_CLIENT_CERT_LIFETIME
  value: {{ include "meshrelay.unitValue" $s.relay.clientCertLifetime | quote }}
- name: MESHRELAY_TOKEN_TTL
  value: {{ include "meshrelay.unitValue" $s.relay.tokenTtl | quote }}
- name: MESHRELAY_TOKEN_OVERLAP
  value: {{ include "meshrelay.unitValue" $s.relay.tokenOverlap | quote }}
- name: MESHRELAY_MAX_SNAPSHOT_BYTES
  value: {{ include "meshrelay.unitValue" $s.relay.maxSnapshotBytes | quote }}
- name: MESHRELAY_MAX_RESOURCES
  value: {{ $s.relay.maxResources | int64 | quote }}
- name: MESHRELAY_MAX_DELTA_PATCH_OPS
  value: {{ $s.relay.maxDeltaPatchOps | int64 | quote }}
- name: MESHRELAY_MAX_RESOURCE_PATCH_OPS
  value: {{ $s.relay.maxResourcePatchOps | int64 | quote }}
- name: MESHRELAY_MAX_DELTA_PATCH_WORK
  value: {{ $s.relay.maxDeltaPatchWork | int64 | quote }}
- name: MESHRELAY_SNAPSHOT_TRANSFER_TIMEOUT
  value: {{ include "meshrelay.unitValue" $s.relay.snapshotTransferTimeout | quote }}
- name: MESHRELAY_MAX_CONNECTIONS_PER_PEER
  value: {{ $s.relay.maxConnectionsPerPeer | int64 | quote }}
- name: MESHRELAY_TLS_HANDSHAKE_TIMEOUT
  value: {{ include "meshrelay.unitValue" $s.relay.tlsHandshakeTimeout | quote }}
- name: MESHRELAY_REGISTRATION_MAX_FAILURES
  value: {{ $s.relay.registrationMaxFailures | int64 | quote }}
- name: MESHRELAY_REGISTRATION_FAILURE_WINDOW
  value: {{ include "meshrelay.unitValue" $s.relay.registrationFailureWindow | quote }}
- name: MESHRELAY_HEARTBEAT_INTERVAL
  value: {{ include "meshrelay.unitValue" $s.relay.heartbeatInterval | quote }}
- name: MESHRELAY_HEARTBEAT_TIMEOUT
  value: {{ include "meshrelay.unitValue" $s.relay.heartbeatTimeout | quote }}
- name: MESHRELAY_DRAIN_RETRY_AFTER
  value: {{ include "meshrelay.unitValue" $s.relay.drainRetryAfter | quote }}
- name: MESHRELAY_RELAY_ADMIT_RATE
  value: {{ $s.relay.admitRate | int64 | quote }}
- name: MESHRELAY_TRANSLATION_DEBOUNCE
  value: {{ include "meshrelay.unitValue" $s.translationDebounce | quote }}
- name: MESHRELAY_MEMORY_RECLAIM_IDLE
  value: {{ include "meshrelay.unitValue" $s.memoryReclaimIdle | quote }}
- name: MESHRELAY_INTEREST_SCOPED_OUTPUTS
  value: {{ $s.interestScopedOutputs | toString | quote }}
- name: MESHRELAY_INTEREST_IDLE
  value: {{ include "meshrelay.unitValue" $s.interestIdle | quote }}
- name: MESHRELAY_TRUST_TICK
  value: {{ include "meshrelay.unitValue" $s.trustTick | quote }}
- name: MESHRELAY_VIP_CIDR
  value: {{ $s.vipCidr | quote }}
- name: MESHRELAY_VIP_CIDR_ROUND_ROBIN
  value: {{ $s.vipCidrRoundRobin | quote }}
- name: MESHRELAY_VIP_CIDR_CLOSEST
  value: {{ $s.vipCidrClosest | quote }}
- name: MESHRELAY_INSTANCE_CIDR
  value: {{ $s.instanceCidr | quote }}
- name: MESHRELAY_SAFE_MODE
  value: {{ $s.safeMode | toString | quote }}
- name: MESHRELAY_SAFE_START_WINDOW
  value: {{ include "meshrelay.unitValue" $s.safeStartWindow | quote }}
- name: MESHRELAY_MAX_DELETE_SHARE
  value: {{ $s.blastRadius.maxDeleteShare | toString | quote }}
- name: MESHRELAY_BLAST_RADIUS_MIN_RESOURCES
  value: {{ $s.blastRadius.minResources | int64 | quote }}
{{- if $s.adminToken.secretName }}
- name: MESHRELAY_ADMIN_TOKEN_FILE
  value: {{ include "meshrelay.adminTokenFile" . | quote }}
{{- end }}
- name: MESHRELAY_LOG_LEVEL
  value: {{ $s.logLevel | quote }}
{{- end -}}
