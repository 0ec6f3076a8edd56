package dashboard

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// A generated fleet stands in for the hub's watches in the page's tests and benchmark: the objects
// are what the controller writes (its own DesiredWork and Hold) and what OCM's work agent reports
// (testenv.SetAgentStatus). What the real watches add (listing, decoding, reconnecting) is covered
// by TestTheFleetFollowsTheHub against a real apiserver, and the lab's TestSyncErrorOnOneClusterOnly
// shows the page on the real fleet.

const argoNS = "openshift-gitops"

func genCluster(name string, labels map[string]string, available metav1.ConditionStatus) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{
			Type: clusterv1.ManagedClusterConditionAvailable, Status: available, Reason: "Generated", LastTransitionTime: metav1.Now(),
		}}},
	}
}

func genAppSet(name string, steps int, statuses ...map[string]any) *unstructured.Unstructured {
	u := argocd.NewApplicationSet()
	u.SetNamespace(argoNS)
	u.SetName(name)
	u.SetUID(types.UID("uid-appset-" + name))
	if steps > 0 {
		list := make([]any, steps)
		for i := range list {
			list[i] = map[string]any{"matchExpressions": []any{}}
		}
		u.Object["spec"] = map[string]any{"strategy": map[string]any{"type": "RollingSync", "rollingSync": map[string]any{"steps": list}}}
	}
	if len(statuses) > 0 {
		list := make([]any, len(statuses))
		for i, s := range statuses {
			list[i] = s
		}
		u.Object["status"] = map[string]any{"applicationStatus": list}
	}
	return u
}

func genApp(appSet, cluster string) *unstructured.Unstructured {
	app := argocd.NewApplication()
	app.SetNamespace(argoNS)
	app.SetName(appSet + "-" + cluster)
	app.SetLabels(map[string]string{api.PullLabel: "true"})
	app.SetAnnotations(map[string]string{api.ClusterAnnotation: cluster, argocd.SkipReconcileAnnotation: "true"})
	if appSet != "" {
		app.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: appSet, UID: types.UID("uid-appset-" + appSet)}})
	}
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "HEAD"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
	}
	return app
}

// genWork is the held work of app, applied, with the cluster's feedback values.
func genWork(t testing.TB, app *unstructured.Unstructured, values map[string]string) *workv1.ManifestWork {
	t.Helper()
	target, _, err := manifestwork.ReadMarkers(app)
	if err != nil {
		t.Fatal(err)
	}
	w, err := manifestwork.DesiredWork(app, nil, target, manifestwork.Deliveries{})
	if err != nil {
		t.Fatal(err)
	}
	if w, err = manifestwork.Hold(w); err != nil {
		t.Fatal(err)
	}
	w.Generation = 1
	if values == nil {
		values = map[string]string{}
	}
	values[manifestwork.FeedbackManagedUID] = "uid-" + app.GetName()
	testenv.SetAgentStatus(w, 1, app.GetNamespace(), app.GetName(), values)
	return w
}

func feedback(sync, health, revision string) map[string]string {
	return map[string]string{manifestwork.FeedbackSync: sync, manifestwork.FeedbackHealth: health, manifestwork.FeedbackRevision: revision}
}

// generate fills f with clusters x appSets Applications, all Synced and Healthy, clusters labelled
// env=prod (even) or env=dev (odd).
func generate(t testing.TB, f *Fleet, clusters, appSets int) {
	t.Helper()
	for c := range clusters {
		env := "prod"
		if c%2 == 1 {
			env = "dev"
		}
		f.SetCluster(genCluster(clusterName(c), map[string]string{"env": env}, metav1.ConditionTrue))
	}
	for a := range appSets {
		f.SetApplicationSet(genAppSet(appSetName(a), 0))
		for c := range clusters {
			app := genApp(appSetName(a), clusterName(c))
			f.SetApplication(app)
			f.SetWork(genWork(t, app, feedback("Synced", "Healthy", "0123456789abcdef0123456789abcdef01234567")))
		}
	}
}

func clusterName(i int) string { return fmt.Sprintf("cluster-%04d", i) }
func appSetName(i int) string  { return fmt.Sprintf("appset-%02d", i) }
