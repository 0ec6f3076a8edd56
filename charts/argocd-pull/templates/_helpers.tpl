{{/*
Names are fixed, not derived from the release: the documents name the Deployment
multicluster-integrations, and the controller is one per hub (its CRDs and ClusterRole are
cluster-wide anyway).
*/}}
{{- define "argocd-pull.name" -}}multicluster-integrations{{- end }}

{{- define "argocd-pull.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: argocd-pull
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Deployment's selector; the same as config/manager's, so either install can replace the other. */}}
{{- define "argocd-pull.selectorLabels" -}}
app.kubernetes.io/name: argocd-pull
app.kubernetes.io/component: controller
{{- end }}

{{- define "argocd-pull.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
The Argo CD namespaces of the install, as a JSON list: argocdNamespace, then gitopsNamespaces.
They drive both the controller's --argocd-namespace and --gitops-namespaces and its Roles. Every
namespace of argocdNamespaceGrants must be one of them (the controller refuses to start otherwise).
*/}}
{{- define "argocd-pull.argocdNamespaces" -}}
{{- $nss := list (required "argocdNamespace is required" .Values.argocdNamespace) -}}
{{- range .Values.gitopsNamespaces }}{{ $nss = append $nss . }}{{ end -}}
{{- $nss = uniq $nss -}}
{{- range $tenant, $granted := .Values.argocdNamespaceGrants }}
{{- range $granted }}
{{- if not (has . $nss) }}
{{- fail (printf "argocdNamespaceGrants.%s names %s, which is not argocdNamespace or in gitopsNamespaces" $tenant .) }}
{{- end }}
{{- end }}
{{- end -}}
{{- toJson $nss -}}
{{- end }}
