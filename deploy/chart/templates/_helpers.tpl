{{/* The Secret holding api-tokens, admin-tokens and webhook-secret-keys. */}}
{{- define "durable-sandbox.tokensSecret" -}}
{{- .Values.tokens.existingSecret | default "durable-sandbox-tokens" -}}
{{- end -}}

{{/* The image of the api and the workers. */}}
{{- define "durable-sandbox.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{/*
The settings the api and the worker share, as env entries (indented by the caller): the
Temporal connection, its mTLS files when the role has a Secret, the sandbox namespace, the
tenant limits and the template catalog. Argument: (list $ "api"|"worker").
*/}}
{{- define "durable-sandbox.sharedEnv" -}}
{{- $ := index . 0 -}}
{{- $role := index . 1 -}}
- name: TEMPORAL_ADDRESS
  value: {{ $.Values.temporal.address }}
{{- with get $.Values.temporal.tlsSecrets $role }}
# mTLS to the Temporal frontend (docs/configuration.md, "Connecting to Temporal"): the
# Secret `{{ . }}` (ca.crt, tls.crt, tls.key; cert-manager's
# Certificate writes this shape) is mounted read-only below. For Temporal Cloud with
# an API key instead, drop these three and set TEMPORAL_API_KEY from a Secret.
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/durable-sandbox/temporal-tls/ca.crt
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/durable-sandbox/temporal-tls/tls.crt
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/durable-sandbox/temporal-tls/tls.key
{{- end }}
- name: SANDBOX_NAMESPACE
  value: {{ $.Values.namespaces.sandboxes }}
# Every tenant's limits (docs/configuration.md, "Tenant limits"): the chart's
# `tenantLimits`; the api and the worker (its Nexus handler admits creates
# too) must carry the same value.
- name: TENANT_LIMITS
  value: {{ $.Values.tenantLimits | toJson | replace "'" "''" | squote }}
{{- with $.Values.sandboxTemplates }}
# The template catalog (docs/configuration.md, "Templates"): the chart's `sandboxTemplates`;
# the worker reads images from its own copy, so both carry it.
- name: SANDBOX_TEMPLATES
  value: {{ . | toJson | replace "'" "''" | squote }}
{{- end }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.database.secretName }}
      key: {{ $.Values.database.secretKey }}
# Webhook signing secrets encrypted at rest (docs/security.md, "Webhook secrets at
# rest"): id:base64key pairs, the first seals; the api seals, the worker opens.
- name: WEBHOOK_SECRET_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "durable-sandbox.tokensSecret" $ }}
      key: webhook-secret-keys
{{- end -}}

{{/* The pod's volumes and the container's mounts; argument: (list $ "api"|"worker"). */}}
{{- define "durable-sandbox.volumeMounts" -}}
{{- $ := index . 0 -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /var/lib/durable-sandbox
{{- if get $.Values.temporal.tlsSecrets (index . 1) }}
- name: temporal-tls
  mountPath: /etc/durable-sandbox/temporal-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "durable-sandbox.volumes" -}}
{{- $ := index . 0 -}}
- name: tmp
  emptyDir: {}
- name: data
  emptyDir: {}
{{- with get $.Values.temporal.tlsSecrets (index . 1) }}
- name: temporal-tls
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/* The pod and container security settings: PodSecurity `restricted`. */}}
{{- define "durable-sandbox.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "durable-sandbox.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ['ALL']
{{- end -}}
