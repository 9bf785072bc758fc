{{/* image is the operator's image reference. */}}
{{- define "gpustack-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* labels are the labels of every object of the release. */}}
{{- define "gpustack-operator.labels" -}}
app.kubernetes.io/name: gpustack-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpustack-operator
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* selector selects the worker's Pods. */}}
{{- define "gpustack-operator.selector" -}}
app.kubernetes.io/name: gpustack-operator
app.kubernetes.io/component: worker
{{- end }}

{{/* certManager is "true" when cert-manager issues the webhook certificate. */}}
{{- define "gpustack-operator.certManager" -}}
{{- $mode := toString .Values.worker.certmanager.enabled -}}
{{- if or (eq $mode "true") (and (eq $mode "auto") (.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
true
{{- end -}}
{{- end }}

{{/* restricted is the container security context the restricted Pod Security profile asks for. */}}
{{- define "gpustack-operator.restricted" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end }}

{{/* rules returns the rules of one generated role in a component's role.yaml: the ClusterRole, or the Role of
namespace (the release's namespace unless given). */}}
{{- define "gpustack-operator.rules" -}}
{{- $file := printf "files/rbac/%s/role.yaml" .component -}}
{{- $namespace := .namespace | default .root.Release.Namespace -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" ($.root.Files.Get $file) -1 -}}
{{- $role := fromYaml $doc -}}
{{- if and (eq (get $role "kind") $.kind) (or (eq $.kind "ClusterRole") (eq (get (get $role "metadata") "namespace") $namespace)) }}
{{ toYaml (get $role "rules") }}
{{- end -}}
{{- end -}}
{{- end }}

{{/* settingsAPI is non-empty when the worker serves settings.gpustack.ai/v1 behind an APIService: a port is
set and the webhooks have a Service (an APIService names a Service, never a URL). */}}
{{- define "gpustack-operator.settingsAPI" -}}
{{- if and .Values.worker.settingsAPI.port (not .Values.worker.webhook.url) }}true{{ end -}}
{{- end }}

{{/* kueueNamespace is where Kueue runs: this release's namespace when the chart installs it, kueueNamespace
otherwise. */}}
{{- define "gpustack-operator.kueueNamespace" -}}
{{- if .Values.kueue.enabled -}}
{{ .Release.Namespace }}
{{- else -}}
{{ .Values.kueueNamespace }}
{{- end -}}
{{- end }}

{{/* celList writes a list of strings as the items of a CEL list literal: 'a', 'b'. */}}
{{- define "gpustack-operator.celList" -}}
{{- range $i, $s := . }}{{ if $i }}, {{ end }}{{ squote $s }}{{ end }}
{{- end }}
