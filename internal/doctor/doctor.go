// Package doctor checks the prerequisites of the Argo CD pull model that the documents list, on
// the hub and on managed clusters, and says how to fix each failure.
//
// Every check is a small function that fetches what it needs and hands it to a pure decision
// function (fetched objects -> Result); the decisions are table-tested, the fetching is tested
// against real apiservers.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/propagation"
	"github.com/argocd-pull/argocd-pull/internal/resourcetree"
	"github.com/argocd-pull/argocd-pull/internal/tenancy"
)

// Status is the verdict of one check.
type Status string

const (
	StatusPass Status = "pass"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// severity orders statuses so that a check made of several findings reports the worst.
func (s Status) severity() int {
	switch s {
	case StatusFail:
		return 3
	case StatusWarn:
		return 2
	case StatusPass:
		return 1
	default:
		return 0
	}
}

// Result is the outcome of one check on one subject.
type Result struct {
	// ID names the check, stable for scripts (e.g. "applicationset-template").
	ID string `json:"id"`
	// Title says what the check looks at.
	Title string `json:"title"`
	// Subject is what was checked when a check runs more than once: an ApplicationSet
	// ("namespace/name") or a managed cluster.
	Subject string `json:"subject,omitempty"`
	Status  Status `json:"status"`
	// Message says what was found.
	Message string `json:"message"`
	// Fix says what to do about a failure or a warning.
	Fix string `json:"fix,omitempty"`
}

// Summary counts the results by status.
type Summary struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// Report is what a run found.
type Report struct {
	Checks  []Result `json:"checks"`
	Summary Summary  `json:"summary"`
}

// NewReport counts the results.
func NewReport(results []Result) Report {
	r := Report{Checks: results}
	if r.Checks == nil {
		r.Checks = []Result{}
	}
	for _, c := range results {
		switch c.Status {
		case StatusPass:
			r.Summary.Pass++
		case StatusWarn:
			r.Summary.Warn++
		case StatusFail:
			r.Summary.Fail++
		default:
			r.Summary.Skip++
		}
	}
	return r
}

// Cluster is an apiserver the doctor reads: the hub or a managed cluster.
type Cluster struct {
	// Name is the managed cluster's name (its ManagedCluster on the hub), or "hub".
	Name      string
	Client    client.Client
	Discovery discovery.DiscoveryInterface
	// URL is the apiserver's address as doctor reaches it.
	URL string
}

// NewCluster builds the clients of a cluster from a rest config.
func NewCluster(name string, cfg *rest.Config, s *runtime.Scheme) (Cluster, error) {
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return Cluster{}, fmt.Errorf("creating client for %s: %w", name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Cluster{}, fmt.Errorf("creating discovery client for %s: %w", name, err)
	}
	return Cluster{Name: name, Client: c, Discovery: dc, URL: cfg.Host}, nil
}

// Defaults of the managed-cluster identities, as the upstream installs name them.
const (
	DefaultControllerServiceAccount = "argocd-application-controller"
	DefaultWorkAgentNamespace       = "open-cluster-management-agent"
	DefaultWorkAgentServiceAccount  = "klusterlet-work-sa"
)

// Options say what to check.
type Options struct {
	Hub Cluster
	// ArgoCDNamespace is the hub's Argo CD namespace, where the ApplicationSets, the cluster
	// secrets and the placement generator ConfigMap live.
	ArgoCDNamespace string
	// PullNamespaces and ManagedNamespaceGrants are the controller's flags of the same names:
	// the pull-model Applications' rules are checked as a controller with them would apply them.
	PullNamespaces         []string
	ManagedNamespaceGrants tenancy.Grants
	// ApplicationSet limits the ApplicationSet checks to one ApplicationSet (default: every
	// ApplicationSet whose template carries a pull-model marker).
	ApplicationSet string
	// Managed are the managed clusters to check, by the name of their ManagedCluster.
	Managed []Cluster
	// ManagedArgoCDNamespace and ControllerServiceAccount name the Argo CD application
	// controller on the managed clusters.
	ManagedArgoCDNamespace   string
	ControllerServiceAccount string
	// WorkAgentNamespace and WorkAgentServiceAccount name the OCM work agent on the managed
	// clusters.
	WorkAgentNamespace      string
	WorkAgentServiceAccount string
	// ArgoCDRedis is the hub Argo CD's redis as doctor reaches it (a port-forward), and its
	// layout; its Address empty, the resource-tree check reads the controller's events only.
	// RedisSecret is the Secret in ArgoCDNamespace whose auth key is its password.
	ArgoCDRedis resourcetree.Options
	RedisSecret string
	// ClusterProxyURL is cluster-proxy's user server as this machine reaches it (a port-forward);
	// empty, the cluster-access check asks each secret's own server.
	ClusterProxyURL string
}

// policy is what the controller's ladder would apply with the same flags.
func (o Options) policy() propagation.Policy {
	return propagation.Policy{ArgoCDNamespace: o.ArgoCDNamespace, PullNamespaces: o.PullNamespaces, ManagedNamespaces: o.ManagedNamespaceGrants}
}

func (o *Options) defaults() {
	if o.ArgoCDNamespace == "" {
		o.ArgoCDNamespace = api.DefaultArgoCDNamespace
	}
	if o.ManagedArgoCDNamespace == "" {
		o.ManagedArgoCDNamespace = api.DefaultArgoCDNamespace
	}
	if o.ControllerServiceAccount == "" {
		o.ControllerServiceAccount = DefaultControllerServiceAccount
	}
	if o.WorkAgentNamespace == "" {
		o.WorkAgentNamespace = DefaultWorkAgentNamespace
	}
	if o.RedisSecret == "" {
		o.RedisSecret = "argocd-redis"
	}
	if o.WorkAgentServiceAccount == "" {
		o.WorkAgentServiceAccount = DefaultWorkAgentServiceAccount
	}
}

// Run runs every check: the hub's, then each managed cluster's.
func Run(ctx context.Context, o Options) Report {
	o.defaults()
	h := &hub{o: o}
	var results []Result
	for _, c := range checks {
		if c.hub != nil {
			results = append(results, runHub(ctx, h, c)...)
		}
	}
	for _, m := range o.Managed {
		s := &spoke{hub: h, cluster: m}
		for _, c := range checks {
			if c.spoke != nil {
				results = append(results, runSpoke(ctx, s, c)...)
			}
		}
	}
	return NewReport(results)
}

// Err is nil unless a check failed; warnings do not fail.
func (r Report) Err() error {
	switch r.Summary.Fail {
	case 0:
		return nil
	case 1:
		return errors.New("1 check failed")
	default:
		return fmt.Errorf("%d checks failed", r.Summary.Fail)
	}
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

var (
	unicodeMarks = map[Status]string{StatusPass: "✓", StatusWarn: "!", StatusFail: "✗", StatusSkip: "-"}
	asciiMarks   = map[Status]string{StatusPass: "[ok]  ", StatusWarn: "[warn]", StatusFail: "[FAIL]", StatusSkip: "[skip]"}
)

// WriteText writes one line per check (mark, title, subject, message), an indented fix under
// failures and warnings, and a closing count. unicode picks ✓/!/✗ marks (for terminals) over
// [ok]/[warn]/[FAIL].
func WriteText(w io.Writer, r Report, unicode bool) error {
	marks, indent := asciiMarks, "       "
	if unicode {
		marks, indent = unicodeMarks, "  "
	}
	var b strings.Builder
	for _, c := range r.Checks {
		title := c.Title
		if c.Subject != "" {
			title += " (" + c.Subject + ")"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", marks[c.Status], title, c.Message)
		if c.Fix != "" && (c.Status == StatusFail || c.Status == StatusWarn) {
			lines := strings.Split(strings.TrimRight(c.Fix, "\n"), "\n")
			fmt.Fprintf(&b, "%sfix: %s\n", indent, lines[0])
			for _, l := range lines[1:] {
				fmt.Fprintf(&b, "%s     %s\n", indent, l)
			}
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "\n%d checks: %d passed, %d %s, %d failed, %d skipped\n",
		len(r.Checks), s.Pass, s.Warn, plural(s.Warn, "warning", "warnings"), s.Fail, s.Skip)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// worst combines findings into one status.
func worst(statuses ...Status) Status {
	out := StatusPass
	for _, s := range statuses {
		if s.severity() > out.severity() {
			out = s
		}
	}
	return out
}

// listNames shows at most a few names, then how many more: a check over thousands of clusters
// stays one readable line.
func listNames(names []string) string {
	const shown = 10
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// readFailed is the result of a check that could not read what it needs.
func readFailed(id, title, subject string, err error) Result {
	return Result{ID: id, Title: title, Subject: subject, Status: StatusFail, Message: err.Error(),
		Fix: "make sure the kubeconfig reaches the apiserver and may read what the message names"}
}

// skipped is the result of a check that has nothing to look at.
func skipped(id, title, subject, why string) Result {
	return Result{ID: id, Title: title, Subject: subject, Status: StatusSkip, Message: why}
}
