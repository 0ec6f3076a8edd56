package sandbox

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
)

// WaitForReport follows the ApplicationSet's report, printing its summary whenever it changes,
// until every managed cluster is Synced and Healthy or the timeout ends.
func (l *Lab) WaitForReport(ctx context.Context, out io.Writer, timeout time.Duration) (*v1alpha1.MulticlusterApplicationSetReport, error) {
	hub, err := l.Hub.Client()
	if err != nil {
		return nil, err
	}
	want := strconv.Itoa(len(l.Managed))
	deadline := time.Now().Add(timeout)
	last := ""
	report := &v1alpha1.MulticlusterApplicationSetReport{}
	for {
		err := hub.Get(ctx, types.NamespacedName{Namespace: ArgoNamespace, Name: ApplicationSetName}, report)
		line := "report: not created yet"
		if err == nil {
			s := report.Statuses.Summary
			line = fmt.Sprintf("report: clusters %s, synced %s, healthy %s, in progress %s, not healthy %s", s.Clusters, s.Synced, s.Healthy, s.InProgress, s.NotHealthy)
			if s.Clusters == want && s.Synced == want && s.Healthy == want {
				fmt.Fprintf(out, "  %s\n", line)
				return report, nil
			}
		}
		if line != last {
			fmt.Fprintf(out, "  %s\n", line)
			last = line
		}
		if time.Now().After(deadline) {
			return report, fmt.Errorf("the report did not show %s Synced and Healthy clusters within %s; read the logs in %s/logs", want, timeout, l.Dir)
		}
		select {
		case <-ctx.Done():
			return report, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
