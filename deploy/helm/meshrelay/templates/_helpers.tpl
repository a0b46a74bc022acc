{{/*
Name prefix of every resource: fullnameOverride, else the release name when it contains the chart
name, else "<release>-<chart>". Truncated to 40 characters so that suffixed names
("-mgmt-server-metrics") stay valid DNS-1035 labels (63 characters).
*/}}
{{- define "meshrelay.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "meshrelay.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "meshrelay.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "meshrelay.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: meshrelay
{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "component" "mgmt-server"). */}}
{{- define "meshrelay.selectorLabels" -}}
app.kubernetes.io/name: {{ include "meshrelay.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "meshrelay.componentLabels" -}}
{{ include "meshrelay.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* "<repository>:<tag>", the tag defaulting to the chart's appVersion; call with (dict "root" $ "image" .Values.x.image). */}}
{{- define "meshrelay.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}

{{- define "meshrelay.mgmtServer.name" -}}{{ include "meshrelay.fullname" . }}-mgmt-server{{- end -}}
{{- define "meshrelay.relayService.name" -}}{{ include "meshrelay.fullname" . }}-relay{{- end -}}
{{- define "meshrelay.apiService.name" -}}{{ include "meshrelay.fullname" . }}-api{{- end -}}
{{- define "meshrelay.metricsService.name" -}}{{ include "meshrelay.fullname" . }}-mgmt-server-metrics{{- end -}}
{{- define "meshrelay.redis.name" -}}{{ include "meshrelay.fullname" . }}-redis{{- end -}}
{{- define "meshrelay.agent.name" -}}{{ include "meshrelay.fullname" . }}-agent{{- end -}}
{{- define "meshrelay.agentAccessLogService.name" -}}{{ include "meshrelay.fullname" . }}-agent-access-log{{- end -}}

{{/* The agent's output sink: glooAgent.apply, else its discovery provider. */}}
{{- define "meshrelay.agent.apply" -}}
{{- .Values.glooAgent.apply | default .Values.glooAgent.discovery.provider -}}
{{- end -}}

{{/* The agent's --leader-election mode: kubernetes (a Lease) or none. */}}
{{- define "meshrelay.agent.leaderElection" -}}
{{- if .Values.glooAgent.leaderElection.enabled }}kubernetes{{ else }}none{{ end -}}
{{- end -}}

{{/* "true" when the agent talks to its cluster's API at all (discovery, apply or the Lease). */}}
{{- define "meshrelay.agent.usesApi" -}}
{{- or (eq .Values.glooAgent.discovery.provider "kubernetes") (eq (include "meshrelay.agent.apply" .) "kubernetes") .Values.glooAgent.leaderElection.enabled (ne (.Values.glooAgent.relay.credentialsSecret | default "") "") -}}
{{- end -}}
{{- define "meshrelay.stateClaim.name" -}}
{{- .Values.glooMgmtServer.state.persistence.existingClaim | default (printf "%s-state" (include "meshrelay.mgmtServer.name" .)) -}}
{{- end -}}

{{/* In-cluster DNS name of the relay Service. */}}
{{- define "meshrelay.relayService.host" -}}
{{- printf "%s.%s.svc" (include "meshrelay.relayService.name" .) .Release.Namespace -}}
{{- end -}}

{{/* The relay address agents are told at registration: advertiseAddress, else the relay Service's in-cluster name. */}}
{{- define "meshrelay.advertiseAddress" -}}
{{- .Values.glooMgmtServer.relay.advertiseAddress | default (printf "%s:%d" (include "meshrelay.relayService.host" .) (int .Values.glooMgmtServer.relay.port)) -}}
{{- end -}}

{{/*
Names for the relay server certificate: every form of the relay Service's name, the advertised
host, and relay.serverHosts. The certificate must name whatever host an agent dials.
*/}}
{{- define "meshrelay.serverHosts" -}}
{{- $svc := include "meshrelay.relayService.name" . -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- $advertised := include "meshrelay.advertiseAddress" . -}}
{{- $hosts = append $hosts (regexReplaceAll ":[0-9]+$" $advertised "" | trimPrefix "[" | trimSuffix "]") -}}
{{- range .Values.glooMgmtServer.relay.serverHosts -}}
{{- $hosts = append $hosts . -}}
{{- end -}}
{{- $hosts | uniq | join "," -}}
{{- end -}}

{{/*
How the server reaches Redis, as EnvVars: the embedded Redis Service, or an external Redis by URL
(or URL Secret) or through Sentinel, with credentials and TLS files from mounted Secrets.
*/}}
{{- define "meshrelay.redisEnv" -}}
{{- $x := .Values.redis.external -}}
{{- if and (not .Values.redis.deploy) $x.sentinel.hosts }}
- name: MESHRELAY_REDIS_SENTINELS
  value: {{ join "," $x.sentinel.hosts | quote }}
- name: MESHRELAY_REDIS_SENTINEL_MASTER
  value: {{ required "redis.external.sentinel.masterName is required with redis.external.sentinel.hosts" $x.sentinel.masterName | quote }}
{{- if $x.sentinel.passwordSecret.name }}
- name: MESHRELAY_REDIS_SENTINEL_PASSWORD_FILE
  value: {{ printf "%s/%s" (include "meshrelay.redisSentinelPasswordDir" .) $x.sentinel.passwordSecret.key | quote }}
{{- end }}
{{- else }}
{{ include "meshrelay.redisUrlEnv" . }}
{{- end }}
{{- if not .Values.redis.deploy }}
{{- if $x.username }}
- name: MESHRELAY_REDIS_USERNAME
  value: {{ $x.username | quote }}
{{- end }}
{{- if $x.passwordSecret.name }}
- name: MESHRELAY_REDIS_PASSWORD_FILE
  value: {{ printf "%s/%s" (include "meshrelay.redisPasswordDir" .) $x.passwordSecret.key | quote }}
{{- end }}
{{- if $x.tls.enabled }}
- name: MESHRELAY_REDIS_TLS
  value: "true"
{{- if $x.tls.secretName }}
- name: MESHRELAY_REDIS_TLS_CA_FILE
  value: {{ printf "%s/ca.crt" (include "meshrelay.redisTlsDir" .) | quote }}
{{- if $x.tls.clientCertificate }}
- name: MESHRELAY_REDIS_TLS_CERT_FILE
  value: {{ printf "%s/tls.crt" (include "meshrelay.redisTlsDir" .) | quote }}
- name: MESHRELAY_REDIS_TLS_KEY_FILE
  value: {{ printf "%s/tls.key" (include "meshrelay.redisTlsDir" .) | quote }}
{{- end }}
{{- end }}
{{- if $x.tls.serverName }}
- name: MESHRELAY_REDIS_TLS_SERVER_NAME
  value: {{ $x.tls.serverName | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
{{- define "meshrelay.redisPasswordDir" -}}/etc/meshrelay/redis-password{{- end -}}
{{- define "meshrelay.redisSentinelPasswordDir" -}}/etc/meshrelay/redis-sentinel-password{{- end -}}
{{- define "meshrelay.redisTlsDir" -}}/etc/meshrelay/redis-tls{{- end -}}

{{/* The Secret volumes of the Redis credentials and TLS files (external Redis only), as "name: secret" pairs. */}}
{{- define "meshrelay.redisSecretVolumes" -}}
{{- $x := .Values.redis.external -}}
{{- if not .Values.redis.deploy }}
{{- if and $x.sentinel.hosts $x.sentinel.passwordSecret.name }}
- {{ list "redis-sentinel-password" $x.sentinel.passwordSecret.name (include "meshrelay.redisSentinelPasswordDir" .) | join "|" }}
{{- end }}
{{- if $x.passwordSecret.name }}
- {{ list "redis-password" $x.passwordSecret.name (include "meshrelay.redisPasswordDir" .) | join "|" }}
{{- end }}
{{- if and $x.tls.enabled $x.tls.secretName }}
- {{ list "redis-tls" $x.tls.secretName (include "meshrelay.redisTlsDir" .) | join "|" }}
{{- end }}
{{- end }}
{{- end -}}

{{/* REDIS_URL as an EnvVar: the embedded Redis Service, an external URL, or a Secret. */}}
{{- define "meshrelay.redisUrlEnv" -}}
- name: REDIS_URL
{{- if .Values.redis.deploy }}
  value: {{ printf "redis://%s.%s.svc:%d" (include "meshrelay.redis.name" .) .Release.Namespace (int .Values.redis.port) | quote }}
{{- else if .Values.redis.external.url }}
  value: {{ .Values.redis.external.url | quote }}
{{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ required "redis.external.urlSecret.name is required when redis.deploy is false and redis.external.url is empty" .Values.redis.external.urlSecret.name }}
      key: {{ .Values.redis.external.urlSecret.key }}
{{- end }}
{{- end -}}

{{/*
Appends extraEnv to the chart's env after refusing any name the chart already sets, so a value
cannot be silently overridden by a duplicate entry. Call with (dict "env" <yaml list> "extra" <list> "field" "<values path>").
*/}}
{{- define "meshrelay.mergeEnv" -}}
{{- $env := fromYamlArray .env -}}
{{- $names := list -}}
{{- range $env }}{{ $names = append $names .name }}{{ end -}}
{{- range .extra -}}
{{- if not (kindIs "map" .) -}}
{{- fail (printf "%s: every entry must be an EnvVar object with a name" $.field) -}}
{{- end -}}
{{- if has .name $names -}}
{{- fail (printf "%s: %s is set by the chart from its own value; change that value instead" $.field .name) -}}
{{- end -}}
{{- end -}}
{{- concat $env .extra | toYaml -}}
{{- end -}}

{{/* The pod topology spread constraints, with the pods' own selector filled in where none is given. */}}
{{- define "meshrelay.topologySpread" -}}
{{- $selector := fromYaml (include "meshrelay.selectorLabels" (dict "root" .root "component" .component)) -}}
{{- $out := list -}}
{{- range .constraints -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) -}}
{{- end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* Host names the API answers to: the API Service's in-cluster names, then glooMgmtServer.http.allowedHosts. */}}
{{- define "meshrelay.httpAllowedHosts" -}}
{{- $svc := include "meshrelay.apiService.name" . -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- join "," (concat $names .Values.glooMgmtServer.http.allowedHosts) -}}
{{- end -}}

{{/* Where the admin token Secret (glooMgmtServer.adminToken.secretName) is mounted, and the file in it. */}}
{{- define "meshrelay.adminTokenDir" -}}/etc/meshrelay/admin-token{{- end -}}
{{- define "meshrelay.adminTokenFile" -}}{{ include "meshrelay.adminTokenDir" . }}/{{ .Values.glooMgmtServer.adminToken.key }}{{- end -}}

{{/*
A duration or size value as the binaries read it: a string keeps its unit (90s, 3m, 7d, 16MiB),
a number is passed as a whole number (its flag's bare unit: seconds, milliseconds or bytes).
*/}}
{{- define "meshrelay.unitValue" -}}
{{- if kindIs "string" . -}}{{ . }}{{- else -}}{{ . | int64 }}{{- end -}}
{{- end -}}

{{/*
Milliseconds of a duration value (dict "value" V "bare" "ms"|"s"): a string carries its unit
(500ms, 5s, 3m, 1h, 7d); a number counts the flag's bare unit.
*/}}
{{- define "meshrelay.durationMs" -}}
{{- $factors := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 -}}
{{- if kindIs "string" .value -}}
{{- $unit := regexFind "(ms|s|m|h|d)$" .value | default .bare -}}
{{- mulf (float64 (trimSuffix $unit .value)) (get $factors $unit) | int64 -}}
{{- else -}}
{{- mul (int64 .value) (get $factors .bare) -}}
{{- end -}}
{{- end -}}
