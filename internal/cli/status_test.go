package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// createDocReport creates the documents' sample report (3 clusters) in ns.
func createDocReport(t *testing.T, env *testenv.Env, ns string) *v1alpha1.MulticlusterApplicationSetReport {
	t.Helper()
	data, err := os.ReadFile("../../test/testdata/docs/multiclusterapplicationsetreport.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := &v1alpha1.MulticlusterApplicationSetReport{}
	if err := yaml.UnmarshalStrict(data, r); err != nil {
		t.Fatal(err)
	}
	r.Namespace = ns
	if err := env.Client.Create(context.Background(), r); err != nil {
		t.Fatalf("creating report: %v", err)
	}
	return r
}

// statusCmd runs `argocd-pull status args...` and returns what it printed.
func statusCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runRoot(t, append([]string{"status"}, args...)...)
}

// runRoot runs the root command with args and returns what it printed, standard error included.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestStatusShowsTheReportClusterByCluster(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ns := env.Namespace(t)
	r := createDocReport(t, env, ns)

	out, err := statusCmd(t, r.Name, "-n", ns, "--kubeconfig", env.Kubeconfig(t))
	g.Expect(err).NotTo(HaveOccurred())
	// Not a terminal: no colours, and nothing cut (as kubectl prints to a pipe).
	message := r.Statuses.ClusterConditions[0].Conditions[0].Message
	g.Expect(out).To(Equal(`CLUSTER    SYNC       HEALTH       REVISION  PHASE  ERROR
cluster1   OutOfSync  Missing      -         -      SyncError: ` + message + `
pcluster1  Synced     Progressing  -         -
pcluster2  Synced     Progressing  -         -

3 clusters: 2 synced, 0 healthy, 2 in progress, 3 not healthy, 1 not synced
`))
}

func TestStatusListsTheReportsOfANamespace(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ns := env.Namespace(t)
	createDocReport(t, env, ns)
	other := &v1alpha1.MulticlusterApplicationSetReport{}
	other.Namespace, other.Name = ns, "podinfo"
	other.Statuses.Summary = v1alpha1.ReportSummary{Clusters: "2", Synced: "2", Healthy: "2", InProgress: "0", NotHealthy: "0", NotSynced: "0"}
	g.Expect(env.Client.Create(context.Background(), other)).To(Succeed())
	kubeconfig := env.Kubeconfig(t)

	out, err := statusCmd(t, "-n", ns, "--kubeconfig", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(`NAME                           CLUSTERS  SYNCED  HEALTHY  IN-PROGRESS  NOT-HEALTHY
guestbook-allclusters-app-set  3         2       0        2            3
podinfo                        2         2       2        0            0
`))

	out, err = statusCmd(t, "-A", "--kubeconfig", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("NAMESPACE"))
	g.Expect(out).To(MatchRegexp(`(?m)^` + ns + `\s+podinfo\s+2\s+2\s+2\s+0\s+0$`))

	out, err = statusCmd(t, "-n", env.Namespace(t), "--kubeconfig", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("No reports in namespace "))
}

func TestStatusPrintsTheReportAsJSONAndYAML(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ns := env.Namespace(t)
	r := createDocReport(t, env, ns)
	kubeconfig := env.Kubeconfig(t)

	for _, format := range []string{"json", "yaml"} {
		out, err := statusCmd(t, r.Name, "-n", ns, "--kubeconfig", kubeconfig, "-o", format)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).NotTo(ContainSubstring("managedFields"))
		var got v1alpha1.MulticlusterApplicationSetReport
		g.Expect(yaml.UnmarshalStrict([]byte(out), &got)).To(Succeed(), format)
		g.Expect(got.APIVersion).To(Equal(v1alpha1.GroupVersion.String()))
		g.Expect(got.Kind).To(Equal("MulticlusterApplicationSetReport"))
		g.Expect(got.Name).To(Equal(r.Name))
		g.Expect(got.ResourceVersion).To(Equal(r.ResourceVersion))
		g.Expect(got.Statuses).To(Equal(r.Statuses), format)
	}

	out, err := statusCmd(t, "-n", ns, "--kubeconfig", kubeconfig, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var list v1alpha1.MulticlusterApplicationSetReportList
	g.Expect(json.Unmarshal([]byte(out), &list)).To(Succeed())
	g.Expect(list.Kind).To(Equal("MulticlusterApplicationSetReportList"))
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].ManagedFields).To(BeEmpty())
	g.Expect(list.Items[0].Statuses).To(Equal(r.Statuses))
}

func TestStatusOfAMissingReportIsAClearError(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ns := env.Namespace(t)

	_, err := statusCmd(t, "guestbook", "-n", ns, "--kubeconfig", env.Kubeconfig(t))
	g.Expect(err).To(MatchError(And(
		HavePrefix("no report for ApplicationSet "+ns+"/guestbook: "),
		ContainSubstring(`"guestbook" not found`),
		HaveSuffix("(is the argocd-pull controller running, and does the ApplicationSet have pull-model Applications?)"),
	)))
}

// Without -n, the namespace is the kubeconfig context's.
func TestStatusTakesTheNamespaceOfTheKubeconfigContext(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ns := env.Namespace(t)
	r := createDocReport(t, env, ns)
	out, err := statusCmd(t, r.Name, "--kubeconfig", withContextNamespace(t, env.Kubeconfig(t), ns))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("CLUSTER "))
}

// withContextNamespace writes the kubeconfig with its current context naming namespace ns, and
// returns its path.
func withContextNamespace(t *testing.T, kubeconfig, ns string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// A hub without the report CRD answers 404 too; the error must say so instead of blaming the
// controller.
func TestStatusTellsAMissingAPIFromAMissingReport(t *testing.T) {
	reports := reportResource.GroupResource()
	tests := map[string]struct {
		err         error
		wantMissing bool
	}{
		"report not found":             {err: apierrors.NewNotFound(reports, "guestbook")},
		"resource not served by group": {err: &apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonNotFound, Code: 404, Details: &metav1.StatusDetails{}}}, wantMissing: true},
		"group not served":             {err: apierrors.NewGenericServerResponse(404, "GET", reports, "guestbook", "404 page not found", 0, true), wantMissing: true},
		"not an api error":             {err: errors.New("connection refused")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(missingAPI(tc.err)).To(Equal(tc.wantMissing))
			if tc.wantMissing {
				g.Expect(reportError(tc.err, "argocd", "guestbook")).To(MatchError(ContainSubstring("are argocd-pull's CRDs installed?")))
			}
		})
	}
}

func TestStatusRejectsBadFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown output":            {args: []string{"-o", "xml"}, want: `unknown output format "xml": want table, yaml or json`},
		"name with all namespaces":  {args: []string{"guestbook", "-A"}, want: "--all-namespaces lists reports and takes no ApplicationSet name"},
		"more than one appset name": {args: []string{"a", "b"}, want: "accepts at most 1 arg(s), received 2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := statusCmd(t, tc.args...)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestStatusHelpHasExamples(t *testing.T) {
	g := NewWithT(t)
	out, err := statusCmd(t, "--help")
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range []string{"Examples:", "--watch", "--output", "--all-namespaces", "--namespace", "--no-color", "NO_COLOR", "--kubeconfig"} {
		g.Expect(out).To(ContainSubstring(s))
	}
}

// --watch prints a new table when the report changes and stops when its context ends.
func TestStatusWatchPrintsANewTableOnChange(t *testing.T) {
	env := testenv.Get(t)
	g := NewWithT(t)
	ns := env.Namespace(t)
	r := createDocReport(t, env, ns)

	var out syncBuffer
	cmd := NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"status", r.Name, "-n", ns, "--kubeconfig", env.Kubeconfig(t), "--watch"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	g.Eventually(out.String, 20*time.Second, 50*time.Millisecond).Should(ContainSubstring("3 clusters: 2 synced"))
	// The watch starts from the resource version of the first table: no change is missed.
	r.Statuses.ClusterConditions[0] = v1alpha1.ClusterCondition{Cluster: "cluster1", SyncStatus: "Synced", HealthStatus: "Healthy",
		SyncRevision: "4b2c3d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c", OperationStatePhase: "Succeeded"}
	r.Statuses.Summary = v1alpha1.ReportSummary{Clusters: "3", Synced: "3", Healthy: "1", InProgress: "2", NotHealthy: "2", NotSynced: "0"}
	g.Expect(env.Client.Update(context.Background(), r)).To(Succeed())

	g.Eventually(out.String, 20*time.Second, 50*time.Millisecond).Should(ContainSubstring("3 clusters: 3 synced"))
	tables := strings.Split(out.String(), "\n\nCLUSTER ")
	g.Expect(tables).To(HaveLen(2), "a blank line between the tables:\n%s", out.String())
	g.Expect(tables[1]).To(ContainSubstring("cluster1   Synced  Healthy      4b2c3d5   Succeeded\n"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))

	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
}

// syncBuffer is a bytes.Buffer the command writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
