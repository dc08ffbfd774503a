{{/* Names, labels and the decisions every template shares (replicas, store, secrets, config). */}}

{{- define "gpubot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpubot.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "gpubot.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "gpubot.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object: gpubot.commonLabels plus name and instance. */}}
{{- define "gpubot.labels" -}}
app.kubernetes.io/name: {{ include "gpubot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "gpubot.commonLabels" . }}
{{- end -}}

{{/* The labels that are not selectors (pod templates add them to their selector labels). */}}
{{- define "gpubot.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The bot's pods; the agent's use gpubot.agentSelectorLabels. */}}
{{- define "gpubot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpubot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: bot
{{- end -}}

{{- define "gpubot.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "gpubot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "gpubot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gpubot.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gpubot.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* "true" when the store is PostgreSQL (a URL in values or an existing Secret). */}}
{{- define "gpubot.postgres" -}}
{{- if or .Values.postgresql.url .Values.postgresql.existingSecret -}}true{{- end -}}
{{- end -}}

{{/* Bot replicas: ha.enabled means at least two. */}}
{{- define "gpubot.replicas" -}}
{{- $n := int .Values.replicaCount -}}
{{- if and .Values.ha.enabled (lt $n 2) -}}{{- $n = 2 -}}{{- end -}}
{{- $n -}}
{{- end -}}

{{/* "true" with more than one replica: PostgreSQL and Lease leader election. */}}
{{- define "gpubot.ha" -}}
{{- if gt (int (include "gpubot.replicas" .)) 1 -}}true{{- end -}}
{{- end -}}

{{/* Refuse values that cannot work, with the value to change; included by every workload. */}}
{{- define "gpubot.validate" -}}
{{- $n := int (include "gpubot.replicas" .) -}}
{{- if and (gt $n 1) (not (include "gpubot.postgres" .)) -}}
{{- fail (printf "gpubot: %d replicas need PostgreSQL: set postgresql.url or postgresql.existingSecret (SQLite serves a single replica)" $n) -}}
{{- end -}}
{{- $owned := list -}}
{{- range $key := list "web" "store" "runbooks" -}}
{{- if hasKey ($.Values.config | default dict) $key -}}{{- $owned = append $owned (printf "config.%s" $key) -}}{{- end -}}
{{- end -}}
{{- if $owned -}}
{{- fail (printf "gpubot: the chart sets %s itself: use service.port, postgresql.* or persistence.*, and runbooks.* instead" (join ", " $owned)) -}}
{{- end -}}
{{- $le := (.Values.config | default dict).leader_election | default dict -}}
{{- range $key := list "enabled" "namespace" "lease_name" -}}
{{- if hasKey $le $key -}}
{{- fail (printf "gpubot: config.leader_election.%s is set by the chart (on with more than one replica)" $key) -}}
{{- end -}}
{{- end -}}
{{- range $c := (.Values.config | default dict).clusters | default list -}}
{{- if hasKey $c "agent_url" -}}
{{- fail (printf "gpubot: config.clusters[%s].agent_url is no longer read: the bot finds each node's agent from the cluster; set agent: {address: agent_pod, port: 9400}" ($c.name | default "?")) -}}
{{- end -}}
{{- end -}}
{{- range $file, $_ := .Values.runbooks.extra -}}
{{- if not (regexMatch "^[-._a-zA-Z0-9]+\\.ya?ml$" $file) -}}
{{- fail (printf "gpubot: runbooks.extra key %q must be a file name ending in .yaml or .yml" $file) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Secret with the tokens: the operator's, or the chart's. */}}
{{- define "gpubot.secretName" -}}
{{- default (include "gpubot.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* Where GPUBOT_STORE__URL comes from. */}}
{{- define "gpubot.postgresSecretName" -}}
{{- default (include "gpubot.fullname" .) .Values.postgresql.existingSecret -}}
{{- end -}}

{{- define "gpubot.postgresSecretKey" -}}
{{- if .Values.postgresql.existingSecret -}}{{ .Values.postgresql.existingSecretKey }}{{- else -}}postgresql-url{{- end -}}
{{- end -}}

{{/* The cluster name on the agents' XID events. */}}
{{- define "gpubot.agentCluster" -}}
{{- $clusters := (.Values.config | default dict).clusters | default list -}}
{{- if .Values.agent.cluster -}}{{ .Values.agent.cluster }}
{{- else if $clusters -}}{{ (first $clusters).name }}
{{- else -}}sim{{- end -}}
{{- end -}}

{{/* The bot's tokens for the agents, as gpubot's config names it: per_node or shared. */}}
{{- define "gpubot.botAudience" -}}
{{- if eq (.Values.identity.botAudience | default "perNode") "shared" -}}shared{{- else -}}per_node{{- end -}}
{{- end -}}

{{- define "gpubot.leaseName" -}}
{{- printf "%s-leader" (include "gpubot.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpubot.configPath" -}}/etc/gpubot/config/config.yaml{{- end -}}
{{- define "gpubot.runbooksDir" -}}/etc/gpubot/runbooks{{- end -}}
{{- define "gpubot.dataDir" -}}/var/lib/gpubot{{- end -}}
{{- define "gpubot.port" -}}8080{{- end -}}

{{/* gpubot's config file: the operator's `config` plus the keys the chart owns. */}}
{{- define "gpubot.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- $_ := set $cfg "web" (dict "host" "0.0.0.0" "port" (int (include "gpubot.port" .))) -}}
{{- if not (include "gpubot.postgres" .) -}}
{{- $_ := set $cfg "store" (dict "url" (printf "sqlite:///%s/gpubot.db" (include "gpubot.dataDir" .))) -}}
{{- end -}}
{{- $runbooks := dict "builtin" .Values.runbooks.builtin -}}
{{- if .Values.runbooks.extra -}}
{{- $_ := set $runbooks "dirs" (list (include "gpubot.runbooksDir" .)) -}}
{{- end -}}
{{- $_ := set $cfg "runbooks" $runbooks -}}
{{- /* agent_pod: the agents are this release's DaemonSet pods, in this namespace. */}}
{{- $agentSelector := printf "app.kubernetes.io/name=%s,app.kubernetes.io/instance=%s,app.kubernetes.io/component=agent" (include "gpubot.name" .) .Release.Name -}}
{{- range $c := $cfg.clusters | default list -}}
{{- $a := $c.agent | default dict -}}
{{- if eq ($a.address | default "") "agent_pod" -}}
{{- if not (hasKey $a "namespace") -}}{{- $_ := set $a "namespace" $.Release.Namespace -}}{{- end -}}
{{- if not (hasKey $a "selector") -}}{{- $_ := set $a "selector" $agentSelector -}}{{- end -}}
{{- if not (hasKey $a "port") -}}{{- $_ := set $a "port" (int $.Values.agent.port) -}}{{- end -}}
{{- end -}}
{{- /* This release's agents on a Kubernetes cluster: ServiceAccount tokens, this release's
agent account and audience (a cluster may still say identity: hmac, e.g. Slurm hosts). */}}
{{- if and $c.agent (eq ($c.backend | default "simulated") "kubernetes") -}}
{{- if not (hasKey $a "identity") -}}{{- $_ := set $a "identity" "serviceaccount" -}}{{- end -}}
{{- if eq $a.identity "serviceaccount" -}}
{{- if not (hasKey $a "namespace") -}}{{- $_ := set $a "namespace" $.Release.Namespace -}}{{- end -}}
{{- if not (hasKey $a "audience") -}}{{- $_ := set $a "audience" $.Values.identity.audience -}}{{- end -}}
{{- if not (hasKey $a "service_account") -}}{{- $_ := set $a "service_account" (printf "%s-agent" (include "gpubot.fullname" $)) -}}{{- end -}}
{{- if not (hasKey $a "bot_audience") -}}{{- $_ := set $a "bot_audience" (include "gpubot.botAudience" $) -}}{{- end -}}
{{- if not (hasKey $a "bot_service_account") -}}{{- $_ := set $a "bot_service_account" (include "gpubot.serviceAccountName" $) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $le := deepCopy ($cfg.leader_election | default dict) -}}
{{- $_ := set $le "enabled" (eq (include "gpubot.ha" .) "true") -}}
{{- $_ := set $le "namespace" .Release.Namespace -}}
{{- $_ := set $le "lease_name" (include "gpubot.leaseName" .) -}}
{{- $_ := set $cfg "leader_election" $le -}}
{{- toYaml $cfg -}}
{{- end -}}
