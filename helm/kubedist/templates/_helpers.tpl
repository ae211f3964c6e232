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

{{- /*
"true" when the training pods get NetworkPolicies: networkPolicy.enabled true, or "auto" (the default) and the
cluster serves the API of a network plugin known to enforce NetworkPolicy (Calico, Cilium, Antrea, the AWS VPC
CNI's policy agent). `helm template` without --api-versions sees none of them.
*/ -}}
{{- define "kubedist.networkPolicyOn" -}}
{{- $enabled := .Values.networkPolicy.enabled -}}
{{- if eq (toString $enabled) "auto" -}}
{{- $caps := .Capabilities.APIVersions -}}
{{- if or ($caps.Has "crd.projectcalico.org/v1") ($caps.Has "cilium.io/v2") ($caps.Has "crd.antrea.io/v1beta1") ($caps.Has "networking.k8s.aws/v1alpha1") -}}
true
{{- end -}}
{{- else if $enabled -}}
true
{{- end -}}
{{- end -}}

{{- /*
The ingress rules, besides the job's own pods, that the training pods' policies allow (JSON): the operator's
pods on the port named rendezvous (its STATUS polls), networkPolicy.metricsFrom on kd-metrics, extraIngress.
*/ -}}
{{- define "kubedist.networkPolicyIngress" -}}
{{- $operator := dict "namespaceSelector" (dict "matchLabels" (dict "kubernetes.io/metadata.name" .Release.Namespace))
      "podSelector" (dict "matchLabels" (include "kubedist.selectorLabels" . | fromYaml)) -}}
{{- $rules := list (dict "from" (list $operator) "ports" (list (dict "port" "rendezvous" "protocol" "TCP"))) -}}
{{- if and (gt (int .Values.metrics.launcherPort) 0) .Values.networkPolicy.metricsFrom -}}
{{- $rules = append $rules (dict "from" .Values.networkPolicy.metricsFrom "ports" (list (dict "port" "kd-metrics" "protocol" "TCP"))) -}}
{{- end -}}
{{- range .Values.networkPolicy.extraIngress -}}
{{- $rules = append $rules . -}}
{{- end -}}
{{- toJson $rules -}}
{{- end -}}
