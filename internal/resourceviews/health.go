package resourceviews

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The health of the children no managed Argo CD reports to the hub, by Argo CD's own rules
// (gitops-engine pkg/health, v3.5.1: health_pod.go, health_replicaset.go, and GetResourceHealth's
// "Pending deletion"). Only the status: a health message is free text from the cluster.

// PodHealth is a Pod's health as Argo CD reads it.
func PodHealth(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "Progressing"
	}
	if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		for _, c := range pod.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && (strings.HasPrefix(w.Reason, "Err") || strings.HasSuffix(w.Reason, "Error") || strings.HasSuffix(w.Reason, "BackOff")) {
				return "Degraded"
			}
		}
	}
	switch pod.Status.Phase {
	case corev1.PodPending:
		return "Progressing"
	case corev1.PodSucceeded:
		return "Healthy"
	case corev1.PodFailed:
		return "Degraded"
	case corev1.PodRunning:
		switch pod.Spec.RestartPolicy {
		case corev1.RestartPolicyAlways:
			if podReady(pod) {
				return "Healthy"
			}
			for _, c := range pod.Status.ContainerStatuses {
				if c.LastTerminationState.Terminated != nil {
					return "Degraded"
				}
			}
			return "Progressing"
		case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
			return "Progressing"
		}
	}
	return "Unknown"
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ReplicaSetHealth is a ReplicaSet's health as Argo CD reads it.
func ReplicaSetHealth(rs *appsv1.ReplicaSet) string {
	if rs.DeletionTimestamp != nil {
		return "Progressing"
	}
	if rs.Generation > rs.Status.ObservedGeneration {
		return "Progressing"
	}
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return "Degraded"
		}
	}
	if rs.Spec.Replicas != nil && rs.Status.AvailableReplicas < *rs.Spec.Replicas {
		return "Progressing"
	}
	return "Healthy"
}
