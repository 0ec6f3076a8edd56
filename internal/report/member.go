package report

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/appstatus"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// NewMember is what a hub Application says about its cluster's entry: its target cluster, its work's
// name, the source it wants and why it is not delivered or paused. pull is false for an Application
// that is not pull-model. When its markers do not decide a target (err), the entry carries the error
// and the caller attaches no work.
func NewMember(app *unstructured.Unstructured) (m Member, pull bool, err error) {
	target, pull, err := manifestwork.ReadMarkers(app)
	if err == nil && !pull {
		return Member{}, false, nil
	}
	cluster, _ := argocd.Annotation(app, api.ClusterAnnotation)
	m = Member{
		Cluster:          cluster,
		AppNamespace:     app.GetNamespace(),
		AppName:          app.GetName(),
		WorkName:         manifestwork.WorkName(app.GetNamespace(), app.GetName()),
		Wanted:           appstatus.WantedSource(app),
		PropagationError: argocd.ConditionMessage(app, api.PropagationErrorCondition),
		Paused:           argocd.ConditionMessage(app, api.PausedCondition),
		SyncCleared:      manifestwork.HubOf(app).SyncCleared,
	}
	if err != nil {
		m.PropagationError = err.Error()
		return m, true, err
	}
	m.Cluster = target.Cluster
	return m, true, nil
}

// Attach adds the Application's ManifestWork (nil when none) and its ManagedCluster (nil when it
// does not exist on the hub).
func (m *Member) Attach(work *workv1.ManifestWork, cluster *clusterv1.ManagedCluster) {
	if work != nil {
		m.Work, m.WorkName = work, work.Name
		if t, ok := manifestwork.WrittenAt(work); ok {
			m.WorkWrittenAt = t
		}
	}
	m.ManagedCluster = cluster
}

// Entry is one cluster's entry as Build writes it before the report's size bound: its statuses,
// conditions (capped as in the report) and deployed resources; recheck is when it turns stale if
// nothing changes (zero when it will not).
func Entry(m Member, opts Options) (cc v1alpha1.ClusterCondition, resources []v1alpha1.ResourceRef, recheck time.Time) {
	cc, recheck, resources, _, _ = member(m, opts.withDefaults())
	return cc, resources, recheck
}
