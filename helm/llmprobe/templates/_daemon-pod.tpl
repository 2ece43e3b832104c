{{/* The daemon's pod template, indented for a workload's `spec.template` (the Deployment's,
or each StatefulSet's when sharded): dict "root" (the chart's context), "sharded" (a
StatefulSet whose pod ordinal is the shard) and "twin" ("a" or "b" with
highAvailability, else ""). */}}
{{- define "llmprobe.daemonPodTemplate" -}}
{{- $sharded := .sharded }}
{{- $twin := .twin }}
{{- with .root -}}
    metadata:
      labels:
        {{- include "llmprobe.labels" . | nindent 8 }}
        app.kubernetes.io/component: daemon
        {{- with $twin }}
        llmprobe/twin: {{ . }}
        {{- end }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        # The config is mounted with subPath (no live update): a change rolls the pod.
        checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
        {{- if and .Values.secrets (not .Values.existingSecret) }}
        checksum/secrets: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
        {{- end }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "llmprobe.serviceAccountName" . }}
      automountServiceAccountToken: false
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      {{- with .Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      containers:
        - name: llmprobe
          image: {{ include "llmprobe.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            - daemon
            - --config
            - /etc/llmprobe/config.yaml
            {{- if include "llmprobe.webSecretName" . }}
            - --web.config.file
            - /etc/llmprobe/web/web-config.yml
            {{- if .Values.web.healthUnauthenticated }}
            - --web.health-unauthenticated
            {{- end }}
            {{- end }}
            {{- if .Values.web.enableLifecycle }}
            - --web.enable-lifecycle
            {{- end }}
            {{- if $sharded }}
            - --shard
            - $(POD_INDEX)/{{ int .Values.shards }}
            {{- end }}
            {{- with .Values.location }}
            - --location
            - {{ . | quote }}
            {{- end }}
            {{- range .Values.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          {{- if or $sharded .Values.env }}
          env:
            {{- if $sharded }}
            # The pod's ordinal in its StatefulSet, set as a label by Kubernetes >= 1.28:
            # the shard this pod probes.
            - name: POD_INDEX
              valueFrom:
                fieldRef:
                  fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
            {{- end }}
            {{- with .Values.env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
          ports:
            - name: metrics
              containerPort: {{ include "llmprobe.port" . }}
              protocol: TCP
          {{- $httpProbes := or (not (include "llmprobe.webSecretName" .)) .Values.web.healthUnauthenticated }}
          {{- $scheme := ternary "HTTPS" "HTTP" (eq (include "llmprobe.webTLS" .) "true") }}
          livenessProbe:
            {{- if $httpProbes }}
            httpGet:
              path: /-/healthy
              port: metrics
              scheme: {{ $scheme }}
            {{- else }}
            # The health endpoints need credentials the kubelet cannot send.
            tcpSocket:
              port: metrics
            {{- end }}
            {{- toYaml .Values.livenessProbe | nindent 12 }}
          readinessProbe:
            {{- if $httpProbes }}
            httpGet:
              path: /-/ready
              port: metrics
              scheme: {{ $scheme }}
            {{- else }}
            tcpSocket:
              port: metrics
            {{- end }}
            {{- toYaml .Values.readinessProbe | nindent 12 }}
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/llmprobe/config.yaml
              subPath: config.yaml
              readOnly: true
            {{- if include "llmprobe.hasSecret" . }}
            - name: secrets
              mountPath: /etc/llmprobe/secrets
              readOnly: true
            {{- end }}
            {{- if include "llmprobe.webSecretName" . }}
            # No subPath: a changed Secret reaches the files, and the daemon re-reads them.
            - name: web
              mountPath: /etc/llmprobe/web
              readOnly: true
            {{- end }}
            {{- if .Values.web.tlsSecret }}
            - name: web-tls
              mountPath: /etc/llmprobe/web-tls
              readOnly: true
            {{- end }}
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: config
          configMap:
            name: {{ include "llmprobe.fullname" . }}
        {{- if include "llmprobe.hasSecret" . }}
        - name: secrets
          secret:
            secretName: {{ include "llmprobe.secretName" . }}
            # Group-readable: the files belong to root and the pod's fsGroup.
            defaultMode: 0440
        {{- end }}
        {{- if include "llmprobe.webSecretName" . }}
        - name: web
          secret:
            secretName: {{ include "llmprobe.webSecretName" . }}
            defaultMode: 0440
        {{- end }}
        {{- if .Values.web.tlsSecret }}
        - name: web-tls
          secret:
            secretName: {{ .Values.web.tlsSecret }}
            defaultMode: 0440
        {{- end }}
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- $affinity := deepCopy (.Values.affinity | default dict) }}
      {{- if $twin }}
      {{- /* The two pods of a shard never share a node. A shared pod template cannot name
      its own ordinal, so each pod avoids every node running a pod of the other set: the
      sets take disjoint nodes (at least 2 schedulable nodes). */}}
      {{- $others := fromYaml (include "llmprobe.daemonSelectorLabels" .) }}
      {{- $_ := set $others "llmprobe/twin" (ternary "b" "a" (eq $twin "a")) }}
      {{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" $others) }}
      {{- $anti := get $affinity "podAntiAffinity" | default dict }}
      {{- $required := get $anti "requiredDuringSchedulingIgnoredDuringExecution" | default list }}
      {{- $_ := set $anti "requiredDuringSchedulingIgnoredDuringExecution" (append $required $term) }}
      {{- $_ := set $affinity "podAntiAffinity" $anti }}
      {{- end }}
      {{- with $affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
{{- end }}
