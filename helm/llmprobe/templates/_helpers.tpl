{{/* Names and labels shared by every object of the chart. */}}

{{- define "llmprobe.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "llmprobe.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "llmprobe.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llmprobe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The daemon's pods only (the sweep Job's pods share the name and instance labels). */}}
{{- define "llmprobe.daemonSelectorLabels" -}}
{{ include "llmprobe.selectorLabels" . }}
app.kubernetes.io/component: daemon
{{- end }}

{{- define "llmprobe.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "llmprobe.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: llmprobe
{{- end }}

{{- define "llmprobe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "llmprobe.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "llmprobe.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret holding API keys as files: existingSecret, else the chart's own. */}}
{{- define "llmprobe.secretName" -}}
{{- default (printf "%s-secrets" (include "llmprobe.fullname" .)) .Values.existingSecret }}
{{- end }}

{{- define "llmprobe.hasSecret" -}}
{{- if or .Values.existingSecret .Values.secrets }}true{{ end }}
{{- end }}

{{/* The port the daemon listens on, from config.listen ("host:port"). */}}
{{- define "llmprobe.port" -}}
{{- $listen := default "0.0.0.0:9464" .Values.config.listen | toString }}
{{- $port := regexFind "[0-9]+$" $listen }}
{{- if not $port }}
{{- fail (printf "config.listen %q must end with :<port>" $listen) }}
{{- end }}
{{- $port }}
{{- end }}

{{/* Seconds of a Prometheus duration with one unit (30s, 5m, 1h, 1d, 1w); fails otherwise. */}}
{{- define "llmprobe.durationSeconds" -}}
{{- if not (regexMatch "^[0-9]+[smhdw]$" .) }}
{{- fail (printf "prometheusRule.timeCompression: cannot scale the duration %q (one number and one unit of s, m, h, d, w)" .) }}
{{- end }}
{{- $n := regexReplaceAll "[smhdw]$" . "" | int }}
{{- $unit := regexReplaceAll "^[0-9]+" . "" }}
{{- mul $n (get (dict "s" 1 "m" 60 "h" 3600 "d" 86400 "w" 604800) $unit) }}
{{- end }}

{{/* A duration divided by prometheusRule.timeCompression (dict "d" duration "c" factor), in
seconds; fails unless it divides exactly. */}}
{{- define "llmprobe.compressDuration" -}}
{{- $s := include "llmprobe.durationSeconds" .d | int }}
{{- if ne (mod $s .c) 0 }}
{{- fail (printf "prometheusRule.timeCompression %d does not divide %s (%d s)" (int .c) .d $s) }}
{{- end }}
{{- printf "%ds" (div $s .c) }}
{{- end }}

{{/* The web config Secret's name, when there is a web config. */}}
{{- define "llmprobe.webSecretName" -}}
{{- if .Values.web.existingSecret }}{{ .Values.web.existingSecret }}
{{- else if .Values.web.config }}{{ include "llmprobe.fullname" . }}-web
{{- end }}
{{- end }}

{{/* Whether the daemon serves https: web.tls, checked against an inline web config. */}}
{{- define "llmprobe.webTLS" -}}
{{- if and .Values.web.config (not .Values.web.existingSecret) }}
{{- if ne (hasKey .Values.web.config "tls_server_config") .Values.web.tls }}
{{- fail "web.tls must be true exactly when web.config has tls_server_config" }}
{{- end }}
{{- end }}
{{- if .Values.web.tls }}true{{ end }}
{{- end }}

{{/* Whether the daemon runs as StatefulSets whose pod ordinal is the shard (shards > 1 or
highAvailability) rather than as the single Deployment. */}}
{{- define "llmprobe.sharded" -}}
{{- if or .Values.highAvailability (gt (int .Values.shards) 1) }}true{{ end }}
{{- end }}
