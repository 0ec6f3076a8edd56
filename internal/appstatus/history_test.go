package appstatus

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
)

// historyColumns are the history feedback values of n entries, IDs first..first+n-1, as the work
// agent reports them: JSON lists, or the value itself for one entry.
func historyColumns(first, n int) map[string]string {
	col := func(f func(i int) any) string {
		if n == 1 {
			return fmt.Sprint(f(first))
		}
		var list []any
		for i := first; i < first+n; i++ {
			list = append(list, f(i))
		}
		raw, _ := json.Marshal(list)
		return string(raw)
	}
	return map[string]string{
		manifestwork.FeedbackHistoryIDs:             col(func(i int) any { return i }),
		manifestwork.FeedbackHistoryRevisions:       col(func(i int) any { return fmt.Sprintf("%040d", i) }),
		manifestwork.FeedbackHistoryDeployedAt:      col(func(i int) any { return fmt.Sprintf("2026-11-25T10:00:%02dZ", i%60) }),
		manifestwork.FeedbackHistoryRepoURLs:        col(func(int) any { return "https://git.example/repo" }),
		manifestwork.FeedbackHistoryPaths:           col(func(int) any { return "app" }),
		manifestwork.FeedbackHistoryTargetRevisions: col(func(int) any { return "main" }),
	}
}

func TestHistoryIsRebuiltFromItsColumns(t *testing.T) {
	entry := func(id int) map[string]any {
		return map[string]any{"id": int64(id), "revision": fmt.Sprintf("%040d", id), "deployedAt": fmt.Sprintf("2026-11-25T10:00:%02dZ", id%60),
			"source": map[string]any{"repoURL": "https://git.example/repo", "path": "app", "targetRevision": "main"}}
	}
	t.Run("several entries, as lists", func(t *testing.T) {
		g := NewWithT(t)
		out, trimmed := hubHistory(historyColumns(1, 3))
		g.Expect(trimmed).To(BeEmpty())
		g.Expect(out).To(Equal([]any{entry(1), entry(2), entry(3)}))
	})
	t.Run("one entry, as values", func(t *testing.T) {
		g := NewWithT(t)
		out, trimmed := hubHistory(historyColumns(7, 1))
		g.Expect(trimmed).To(BeEmpty())
		g.Expect(out).To(Equal([]any{entry(7)}))
	})
	t.Run("none", func(t *testing.T) {
		out, trimmed := hubHistory(map[string]string{})
		NewWithT(t).Expect(out).To(BeNil())
		NewWithT(t).Expect(trimmed).To(BeEmpty())
	})
	t.Run("a field some entries lack is left out of all", func(t *testing.T) {
		g := NewWithT(t)
		values := historyColumns(1, 3)
		values[manifestwork.FeedbackHistoryCharts] = `["guestbook"]`
		out, trimmed := hubHistory(values)
		g.Expect(out).To(Equal([]any{entry(1), entry(2), entry(3)}))
		g.Expect(trimmed).To(ConsistOf(ContainSubstring("historyCharts left out")))
	})
	t.Run("deployedAt not one per entry (the CRD requires it): nothing copied", func(t *testing.T) {
		g := NewWithT(t)
		values := historyColumns(1, 3)
		values[manifestwork.FeedbackHistoryDeployedAt] = `["2026-11-25T10:00:00Z"]`
		out, trimmed := hubHistory(values)
		g.Expect(out).To(BeNil())
		g.Expect(trimmed).To(ConsistOf(ContainSubstring("history ignored")))
	})
	t.Run("IDs that are not IDs: nothing copied", func(t *testing.T) {
		g := NewWithT(t)
		for _, ids := range []string{`[1,"two",3]`, `[1,-2,3]`, `[1.5,2,3]`, `[1,2`, `x`} {
			values := historyColumns(1, 3)
			values[manifestwork.FeedbackHistoryIDs] = ids
			out, trimmed := hubHistory(values)
			g.Expect(out).To(BeNil(), ids)
			g.Expect(trimmed).To(HaveLen(1), ids)
		}
	})
	t.Run("a compromised cluster: the newest ten, each value cut, within the size cap", func(t *testing.T) {
		g := NewWithT(t)
		values := historyColumns(1, 1000)
		huge := strings.Repeat("x", 4096)
		urls, _ := json.Marshal(strings.Split(strings.TrimSuffix(strings.Repeat(huge+",", 1000), ","), ","))
		values[manifestwork.FeedbackHistoryRepoURLs] = string(urls)
		out, trimmed := hubHistory(values)
		g.Expect(out).To(HaveLen(MaxHistory))
		g.Expect(out[MaxHistory-1].(map[string]any)["id"]).To(Equal(int64(1000)), "the newest kept")
		encoded, _ := json.Marshal(out)
		g.Expect(len(encoded)).To(BeNumerically("<=", MaxHistorySize))
		url := out[0].(map[string]any)["source"].(map[string]any)["repoURL"].(string)
		g.Expect(len(url)).To(BeNumerically("<=", MaxHistoryValueLength))
		g.Expect(trimmed).To(ContainElements(ContainSubstring("values cut to their caps"), ContainSubstring("the newest 10 of 1000 entries copied")))
	})
}

// argocd app history lists status.history, and argocd app rollback reads an entry's source.
func TestHistoryIsCopiedToTheHub(t *testing.T) {
	g := NewWithT(t)
	values := feedback("Healthy", "Synced", "v2")
	for k, v := range historyColumns(1, 2) {
		values[k] = v
	}
	w := work(2, 2, values)
	// One entry: the work agent reports an ID as an Integer.
	one := work(2, 2, feedback("Healthy", "Synced", "v2"))
	for k, v := range historyColumns(5, 1) {
		val := workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}
		if k == manifestwork.FeedbackHistoryIDs {
			val = workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(int64(5))}
		}
		one.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values = append(one.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values, workv1.FeedbackValue{Name: k, Value: val})
	}
	updated, changed := WithStatus(argocd.NewApplication(), Derive(Observe(w), v2))
	g.Expect(changed).To(BeTrue())
	history, _, _ := unstructured.NestedSlice(updated.Object, "status", "history")
	g.Expect(history).To(HaveLen(2))
	g.Expect(history[1]).To(HaveKeyWithValue("id", int64(2)))

	updated, _ = WithStatus(updated, Derive(Observe(one), v2))
	history, _, _ = unstructured.NestedSlice(updated.Object, "status", "history")
	g.Expect(history).To(HaveLen(1))
	g.Expect(history[0]).To(HaveKeyWithValue("id", int64(5)))
	g.Expect(history[0]).To(HaveKeyWithValue("source", HaveKeyWithValue("repoURL", "https://git.example/repo")))

	updated, _ = WithStatus(updated, Derive(Observe(work(2, 2, feedback("Healthy", "Synced", "v2"))), v2))
	g.Expect(updated.Object["status"]).NotTo(HaveKey("history"), "the hub shows the cluster's: none")
}

// The UI shows status.summary (images, external URLs), sourceType and what the cluster compared
// against (status.sync.comparedTo).
func TestSummaryComparedToAndSourceTypeAreCopied(t *testing.T) {
	g := NewWithT(t)
	values := feedback("Healthy", "Synced", "v2")
	values[manifestwork.FeedbackImages] = `["nginx:1.27","redis:7"]`
	values[manifestwork.FeedbackExternalURLs] = "https://guestbook.example" // one entry: the value itself
	values[manifestwork.FeedbackSourceType] = "Directory"
	app := argocd.NewApplication()
	app.Object["spec"] = map[string]any{"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"}}
	updated, changed := WithStatus(app, Derive(Observe(work(2, 2, values)), v2))
	g.Expect(changed).To(BeTrue())
	g.Expect(updated.Object["status"]).To(HaveKeyWithValue("summary", map[string]any{
		"images": []any{"nginx:1.27", "redis:7"}, "externalURLs": []any{"https://guestbook.example"}}))
	g.Expect(nested(updated, "status", "sourceType")).To(Equal("Directory"))
	compared, _, _ := unstructured.NestedMap(updated.Object, "status", "sync", "comparedTo")
	g.Expect(compared).To(Equal(map[string]any{
		"source":      map[string]any{"repoURL": "https://git.example/repo", "targetRevision": "v2", "path": "app"},
		"destination": map[string]any{"server": argocd.LocalServer, "namespace": "guestbook"},
	}))

	_, changed = WithStatus(updated, Derive(Observe(work(2, 2, values)), v2))
	g.Expect(changed).To(BeFalse(), "the same report writes nothing")

	delete(values, manifestwork.FeedbackImages)
	delete(values, manifestwork.FeedbackExternalURLs)
	updated, _ = WithStatus(updated, Derive(Observe(work(2, 2, values)), v2))
	g.Expect(updated.Object["status"]).NotTo(HaveKey("summary"), "the hub shows the cluster's: none")
}

// A managed cluster writes its Application's external URLs, and the hub's Argo CD UI shows each as
// a link: a javascript: or data: URL would run in the UI's origin when clicked. Only http and
// https URLs reach the hub, and the hub Application says what was dropped.
func TestOnlyHTTPAndHTTPSExternalURLsReachTheHub(t *testing.T) {
	g := NewWithT(t)
	values := feedback("Healthy", "Synced", "v2")
	values[manifestwork.FeedbackExternalURLs] = `["javascript:alert(document.cookie)","https://guestbook.example","data:text/html,<script>alert(1)</script>","HTTP://guestbook.example:8080/x","//attacker.example","JavaScript://%0aalert(1)","vbscript:msgbox","https://"]`
	app := argocd.NewApplication()
	updated, _ := WithStatus(app, Derive(Observe(work(2, 2, values)), v2))
	g.Expect(updated.Object["status"]).To(HaveKeyWithValue("summary", map[string]any{
		"externalURLs": []any{"https://guestbook.example", "HTTP://guestbook.example:8080/x"}}))
	g.Expect(argocd.ConditionMessage(updated, FeedbackWarningCondition)).To(ContainSubstring("summaryExternalURLs: 6 entries dropped: not an http or https URL"))
}
