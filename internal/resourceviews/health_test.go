package resourceviews

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of gitops-engine's health_test.go for Pods and ReplicaSets that the lab's clusters
// meet: no kubelet runs there, so their Pods stay Pending.
func TestPodHealthIsArgoCDs(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	now := metav1.Now()
	for _, c := range []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"pending, as on the lab's clusters", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}, Status: corev1.PodStatus{Phase: corev1.PodPending}}, "Progressing"},
		{"running and ready", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}}, "Healthy"},
		{"running, not ready, restarted", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}}}, "Degraded"},
		{"running, not ready", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "Progressing"},
		{"image pull back-off", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}}, "Degraded"},
		{"a job's pod running", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}}, "Progressing"},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, "Healthy"},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, "Degraded"},
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}}, "Progressing"},
		{"a phase of its own", corev1.Pod{Status: corev1.PodStatus{Phase: "Exploded"}}, "Unknown"},
	} {
		if got := PodHealth(&c.pod); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestReplicaSetHealthIsArgoCDs(t *testing.T) {
	two := int32(2)
	for _, c := range []struct {
		name string
		rs   appsv1.ReplicaSet
		want string
	}{
		{"all available", appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.ReplicaSetSpec{Replicas: &two}, Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, AvailableReplicas: 2}}, "Healthy"},
		{"one of two available", appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.ReplicaSetSpec{Replicas: &two}, Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, AvailableReplicas: 1}}, "Progressing"},
		{"not yet observed", appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.ReplicaSetSpec{Replicas: &two}, Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, AvailableReplicas: 2}}, "Progressing"},
		{"replica failure", appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.ReplicaSetSpec{Replicas: &two}, Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1,
			Conditions: []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue}}}}, "Degraded"},
	} {
		if got := ReplicaSetHealth(&c.rs); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
