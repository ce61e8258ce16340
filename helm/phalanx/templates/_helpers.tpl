{{/* Names, labels and images shared by every template. */}}

{{- define "phalanx.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Resource-name prefix: the release name when it already contains the chart name. */}}
{{- define "phalanx.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "phalanx.scheduler.fullname" -}}{{ include "phalanx.fullname" . }}-scheduler{{- end -}}
{{- define "phalanx.devicePlugin.fullname" -}}{{ include "phalanx.fullname" . }}-device-plugin{{- end -}}
{{- define "phalanx.operator.fullname" -}}{{ include "phalanx.fullname" . }}-operator{{- end -}}

{{/* Labels on every object. Call with (dict "ctx" $ "component" "scheduler"). */}}
{{- define "phalanx.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{ include "phalanx.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: phalanx
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Immutable selector labels (Deployment/DaemonSet selectors, Services). */}}
{{- define "phalanx.selectorLabels" -}}
app.kubernetes.io/name: {{ include "phalanx.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{/* image reference; tag defaults to the chart appVersion. Call with (dict "ctx" $ "image" .Values.x.image). */}}
{{- define "phalanx.image" -}}
{{- printf "%s:%s" .image.repository (default .ctx.Chart.AppVersion .image.tag) -}}
{{- end -}}

{{/* kube-scheduler image: the tag must match the cluster's minor version. */}}
{{- define "phalanx.schedulerImage" -}}
{{- $img := .Values.scheduler.image -}}
{{- if $img.tag -}}
{{- printf "%s:%s" $img.repository $img.tag -}}
{{- else -}}
{{- printf "%s:v%s.%s.0" $img.repository .Capabilities.KubeVersion.Major (.Capabilities.KubeVersion.Minor | trimSuffix "+") -}}
{{- end -}}
{{- end -}}

{{- define "phalanx.operator.progressUrl" -}}
{{- if .Values.operator.progressUrl -}}
{{- .Values.operator.progressUrl -}}
{{- else -}}
{{- printf "http://%s.%s.svc:%d/progress" (include "phalanx.operator.fullname" .) .Release.Namespace (int .Values.operator.progressPort) -}}
{{- end -}}
{{- end -}}

{{- define "phalanx.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The flags every Phalanx daemon shares (logging). */}}
{{- define "phalanx.logFlags" -}}
- --log-format={{ .Values.global.logFormat }}
- --v={{ .Values.global.logVerbosity }}
{{- end -}}

{{/* The gang-gate webhook's serving Secret (tls.crt, tls.key, ca.crt) and its DNS names. */}}
{{- define "phalanx.webhook.secretName" -}}{{ include "phalanx.scheduler.fullname" . }}-webhook-tls{{- end -}}
{{/* Where the webhook's certificate comes from: cert-manager, phalanx (the extender, the
default) or helm (generated once at install). */}}
{{- define "phalanx.webhook.certSource" -}}
{{- if .Values.webhook.certManager.enabled -}}cert-manager{{- else if .Values.webhook.selfManaged.enabled -}}phalanx{{- else -}}helm{{- end -}}
{{- end -}}
{{/* The Secret of the self-managed certificate (its own name: the helm-made one is type
kubernetes.io/tls, and a Secret's type cannot change). */}}
{{- define "phalanx.webhook.managedSecretName" -}}{{ include "phalanx.scheduler.fullname" . }}-webhook-certs{{- end -}}
{{- define "phalanx.webhook.configurationName" -}}{{ include "phalanx.scheduler.fullname" . }}-gang-gate{{- end -}}
{{- define "phalanx.webhook.dnsNames" -}}
{{- $svc := include "phalanx.scheduler.fullname" . -}}
{{- list (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) | toJson -}}
{{- end -}}
