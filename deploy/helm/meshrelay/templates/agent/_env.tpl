{{/*
The relay agent's environment: each value maps onto exactly one MESHRELAY_AGENT_* variable of
meshrelay-agent (packages/agent/src/config.ts). Secrets arrive as files, never as variables (the client
key and certificate live in the Secret glooAgent.relay.credentialsSecret, read through the API). Left at
the binary's default on purpose: the lease name (meshrelay-agent-<cluster>), the kubeconfig (the
pod's service account), and where mesh trust files go (cacerts is the Secret in the Istio namespace
when the agent applies to Kubernetes; otherwise it and the workload certificates are under the state
dir). The list with reasons is AGENT_UNMAPPED in e2e/deploy/helm-env.test.ts.
*/}}
{{- define "meshrelay.agent.tokenPath" -}}/var/run/secrets/meshrelay/relay-token/token{{- end -}}
{{- define "meshrelay.agent.rootCaPath" -}}/var/run/secrets/meshrelay/relay-ca/ca.crt{{- end -}}
{{- define "meshrelay.agent.manifestsDir" -}}/etc/meshrelay/manifests{{- end -}}
{{- define "meshrelay.agent.stateDir" -}}/var/lib/meshrelay-agent/state{{- end -}}
{{- define "meshrelay.agent.outputDir" -}}/var/lib/meshrelay-agent/output{{- end -}}

{{- define "meshrelay.agent.env" -}}
{{- $a := .Values.glooAgent -}}
{{- $apply := include "meshrelay.agent.apply" . -}}
{{- $election := include "meshrelay.agent.leaderElection" . -}}
- name: MESHRELAY_AGENT_REPLICA_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: MESHRELAY_AGENT_CLUSTER
  value: {{ required "glooAgent.cluster is required when glooAgent.enabled is true" $a.cluster | quote }}
- name: MESHRELAY_AGENT_SERVER_ADDRESS
  value: {{ required "glooAgent.relay.serverAddress is required when glooAgent.enabled is true" $a.relay.serverAddress | quote }}
- name: MESHRELAY_AGENT_TOKEN_FILE
  value: {{ include "meshrelay.agent.tokenPath" . | quote }}
- name: MESHRELAY_AGENT_ROOT_CA_FILE
  value: {{ include "meshrelay.agent.rootCaPath" . | quote }}
- name: MESHRELAY_AGENT_DISCOVERY_PROVIDER
  value: {{ $a.discovery.provider | quote }}
- name: MESHRELAY_AGENT_APPLY
  value: {{ $apply | quote }}
{{- if eq $a.discovery.provider "file" }}
- name: MESHRELAY_AGENT_MANIFESTS_DIR
  value: {{ include "meshrelay.agent.manifestsDir" . | quote }}
- name: MESHRELAY_AGENT_RESCAN_INTERVAL
  value: {{ $a.discovery.file.rescanInterval | quote }}
- name: MESHRELAY_AGENT_MAX_MANIFEST_FILE_BYTES
  value: {{ $a.discovery.file.maxFileBytes | quote }}
- name: MESHRELAY_AGENT_MAX_MANIFESTS_BYTES
  value: {{ $a.discovery.file.maxTotalBytes | quote }}
- name: MESHRELAY_AGENT_FOLLOW_EXTERNAL_SYMLINKS
  value: {{ $a.discovery.file.followExternalSymlinks | quote }}
{{- end }}
{{- if eq $apply "file" }}
- name: MESHRELAY_AGENT_OUTPUT_DIR
  value: {{ include "meshrelay.agent.outputDir" . | quote }}
{{- end }}
{{- with $a.discovery.watchNamespaces }}
- name: MESHRELAY_AGENT_WATCH_NAMESPACES
  value: {{ join "," . | quote }}
{{- end }}
{{- if or (eq $a.discovery.provider "kubernetes") (eq $apply "kubernetes") }}
- name: MESHRELAY_AGENT_ISTIO_NAMESPACE
  value: {{ $a.discovery.istioNamespace | quote }}
{{- end }}
- name: MESHRELAY_AGENT_STATE_DIR
  value: {{ include "meshrelay.agent.stateDir" . | quote }}
{{- with $a.relay.credentialsSecret }}
- name: MESHRELAY_AGENT_CREDENTIALS_SECRET
  value: {{ . | quote }}
- name: MESHRELAY_AGENT_CREDENTIALS_NAMESPACE
  value: {{ $.Release.Namespace | quote }}
{{- end }}
- name: MESHRELAY_AGENT_DEBOUNCE_MS
  value: {{ include "meshrelay.unitValue" $a.discovery.debounceMs | quote }}
- name: MESHRELAY_AGENT_HEALTH_HOST
  value: {{ $a.healthHost | quote }}
- name: MESHRELAY_AGENT_HEALTH_PORT
  value: {{ $a.healthPort | int | quote }}
- name: MESHRELAY_AGENT_ACCESS_LOG_HOST
  value: {{ $a.accessLog.host | quote }}
- name: MESHRELAY_AGENT_ACCESS_LOG_PORT
  value: {{ $a.accessLog.port | int | quote }}
- name: MESHRELAY_AGENT_XDS_HOST
  value: {{ $a.xds.host | quote }}
- name: MESHRELAY_AGENT_XDS_PORT
  value: {{ $a.xds.port | int | quote }}
- name: MESHRELAY_AGENT_INTEREST_RENEW_INTERVAL
  value: {{ include "meshrelay.unitValue" $a.interestRenewInterval | quote }}
- name: MESHRELAY_AGENT_TRUST_INTERVAL
  value: {{ include "meshrelay.unitValue" $a.meshTrust.interval | quote }}
- name: MESHRELAY_AGENT_WORKLOAD_CERT_TTL
  value: {{ include "meshrelay.unitValue" $a.meshTrust.workloadCertTtl | quote }}
{{- if $a.xds.socket }}
- name: MESHRELAY_AGENT_XDS_SOCKET
  value: {{ $a.xds.socket | quote }}
{{- end }}
- name: MESHRELAY_AGENT_HEARTBEAT_INTERVAL
  value: {{ $a.relay.heartbeatInterval | quote }}
- name: MESHRELAY_AGENT_HEARTBEAT_TIMEOUT
  value: {{ $a.relay.heartbeatTimeout | quote }}
- name: MESHRELAY_AGENT_MAX_SNAPSHOT_BYTES
  value: {{ $a.relay.maxSnapshotBytes | quote }}
- name: MESHRELAY_AGENT_LEADER_ELECTION
  value: {{ $election | quote }}
{{- if eq $election "kubernetes" }}
- name: MESHRELAY_AGENT_LEASE_NAMESPACE
  value: {{ .Release.Namespace | quote }}
- name: MESHRELAY_AGENT_LEASE_DURATION
  value: {{ $a.leaderElection.leaseDuration | quote }}
- name: MESHRELAY_AGENT_RENEW_DEADLINE
  value: {{ $a.leaderElection.renewDeadline | quote }}
- name: MESHRELAY_AGENT_RETRY_PERIOD
  value: {{ $a.leaderElection.retryPeriod | quote }}
{{- end }}
- name: MESHRELAY_AGENT_LOG_LEVEL
  value: {{ $a.logLevel | quote }}
{{- end -}}
