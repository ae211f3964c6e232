{{/* The chart's name, cut to what a label value allows. */}}
{{- define "kubedist.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects' name: the release name, plus the chart's when the release name lacks it. */}}
{{- define "kubedist.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kubedist.labels" -}}
app.kubernetes.io/name: {{ include "kubedist.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kubedist.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubedist.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "kubedist.serviceAccountName" -}}
{{- default (include "kubedist.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "kubedist.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "kubedist.launcherImage" -}}
{{- default (printf "ghcr.io/kubedist/launcher:%s" .Chart.AppVersion) .Values.launcherImage -}}
{{- end -}}
