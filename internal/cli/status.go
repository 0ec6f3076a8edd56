package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/reportview"
)

// reportResource is read through the dynamic client so that -o yaml/json print the reports
// exactly as the apiserver returned them, fields this version does not know included.
var reportResource = v1alpha1.GroupVersion.WithResource("multiclusterapplicationsetreports")

// clearScreen moves the cursor home and clears a terminal before a redraw.
const clearScreen = "\x1b[H\x1b[2J"

type statusFlags struct {
	kubeconfig    string
	namespace     string
	allNamespaces bool
	output        string
	watch         bool
	noColor       bool
}

func newStatusCommand() *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status [APPSET]",
		Short: "Show the status of pull-model ApplicationSets across managed clusters",
		Long: `Show the MulticlusterApplicationSetReport the argocd-pull controller keeps for every
ApplicationSet with pull-model Applications (same name and namespace as the ApplicationSet).

With an ApplicationSet name: one row per managed cluster with its sync and health status, the
revision it synced to, the phase of its last sync operation and its first error, then the summary
counts and the report's notes. Without a name: one line per ApplicationSet in the namespace (or in
all namespaces with -A) with its counts.

The namespace is --namespace, else the namespace of the kubeconfig's current context, else "` + api.DefaultArgoCDNamespace + `".
Colours are used only when the output is a terminal; --no-color or the NO_COLOR environment
variable turn them off. --watch redraws on every change until interrupted (Ctrl-C).`,
		Example: `  # All pull-model ApplicationSets in the Argo CD namespace
  argocd-pull status

  # One ApplicationSet, cluster by cluster, redrawn on every change
  argocd-pull status guestbook-allclusters-app-set -n openshift-gitops --watch

  # Every report on the hub
  argocd-pull status -A

  # The report as the apiserver returns it
  argocd-pull status guestbook-allclusters-app-set -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runStatus(cmd.Context(), cmd.OutOrStdout(), f, name)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the hub kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster config)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "Namespace of the ApplicationSet (default: the kubeconfig context's namespace, else "+api.DefaultArgoCDNamespace+")")
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "List the reports of all namespaces")
	fs.StringVarP(&f.output, "output", "o", "table", "Output format: table, yaml or json")
	fs.BoolVarP(&f.watch, "watch", "w", false, "Redraw on every change until interrupted")
	fs.BoolVar(&f.noColor, "no-color", false, "Do not colour the table (also: the NO_COLOR environment variable)")
	return cmd
}

func runStatus(ctx context.Context, out io.Writer, f statusFlags, name string) error {
	switch f.output {
	case "table", "yaml", "json":
	default:
		return fmt.Errorf("unknown output format %q: want table, yaml or json", f.output)
	}
	if f.allNamespaces && name != "" {
		return fmt.Errorf("--all-namespaces lists reports and takes no ApplicationSet name (got %q)", name)
	}
	dc, ns, err := hubDynamicClient(f.kubeconfig, f.namespace)
	if err != nil {
		return err
	}
	var reports dynamic.ResourceInterface = dc.Resource(reportResource)
	if !f.allNamespaces {
		reports = dc.Resource(reportResource).Namespace(ns)
	}
	tty := isTerminal(out)
	v := &statusView{
		out: out, output: f.output, name: name, namespace: ns, tty: tty, watching: f.watch,
		opts: reportview.Options{
			Width:         outputWidth(out, tty),
			Color:         tty && !f.noColor && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb",
			AllNamespaces: f.allNamespaces,
		},
	}

	var selector metav1.ListOptions
	var rv string
	if name != "" {
		u, err := reports.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return reportError(err, ns, name)
		}
		v.reset([]unstructured.Unstructured{*u})
		if err := v.printObjects(u); err != nil {
			return err
		}
		selector.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		rv = u.GetResourceVersion()
	} else {
		list, err := reports.List(ctx, metav1.ListOptions{})
		if err != nil {
			return listError(err)
		}
		v.reset(list.Items)
		if err := v.printObjects(list); err != nil {
			return err
		}
		rv = list.GetResourceVersion()
	}
	if err := v.printTable(); err != nil {
		return err
	}
	if !f.watch {
		return nil
	}
	return v.watch(ctx, reports, selector, rv)
}

func reportError(err error, ns, name string) error {
	if apierrors.IsNotFound(err) {
		if missingAPI(err) {
			return fmt.Errorf("the hub serves no MulticlusterApplicationSetReports: %w (are argocd-pull's CRDs installed?)", err)
		}
		return fmt.Errorf("no report for ApplicationSet %s/%s: %w (is the argocd-pull controller running, and does the ApplicationSet have pull-model Applications?)", ns, name, err)
	}
	return fmt.Errorf("getting the report of ApplicationSet %s/%s: %w", ns, name, err)
}

func listError(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the hub serves no MulticlusterApplicationSetReports: %w (are argocd-pull's CRDs installed?)", err)
	}
	return fmt.Errorf("listing reports: %w", err)
}

// missingAPI tells a resource the apiserver does not serve (no CRD) from an object that does not
// exist: only the latter is a status naming the resource. An unknown resource of a served group
// gets a status without details, an unknown group a plain "404 page not found".
func missingAPI(err error) bool {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return false
	}
	d := s.Status().Details
	if d == nil || d.Kind != reportResource.Resource {
		return true
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return true
		}
	}
	return false
}

const noWidthLimit = 1 << 16

// statusView holds the reports being shown and prints them.
type statusView struct {
	out       io.Writer
	output    string
	name      string // one ApplicationSet, or "" for the list
	namespace string
	tty       bool
	watching  bool
	opts      reportview.Options

	reports   map[string]*unstructured.Unstructured // by namespace/name
	lastTable string
	printed   int
}

func (v *statusView) reset(items []unstructured.Unstructured) {
	v.reports = make(map[string]*unstructured.Unstructured, len(items))
	for i := range items {
		v.reports[items[i].GetNamespace()+"/"+items[i].GetName()] = &items[i]
	}
}

// watch follows the reports from resource version rv until ctx ends, resuming where the server
// closed the watch and listing again when the version expired.
func (v *statusView) watch(ctx context.Context, reports dynamic.ResourceInterface, selector metav1.ListOptions, rv string) error {
	for {
		opts := selector
		opts.ResourceVersion = rv
		opts.AllowWatchBookmarks = true
		w, err := reports.Watch(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching reports: %w", err)
		}
		rv, err = v.follow(ctx, w, rv)
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if rv == "" {
			list, err := reports.List(ctx, selector)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return listError(err)
			}
			v.reset(list.Items)
			if err := v.printObjects(list); err != nil {
				return err
			}
			if err := v.printTable(); err != nil {
				return err
			}
			rv = list.GetResourceVersion()
		}
	}
}

// follow applies the events of one watch and returns the resource version to resume from, ""
// when it expired.
func (v *statusView) follow(ctx context.Context, w watch.Interface, rv string) (string, error) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv, nil
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return rv, nil
		}
		if ev.Type == watch.Error {
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return "", nil
			}
			return rv, fmt.Errorf("watching reports: %w", err)
		}
		u, isUnstructured := ev.Object.(*unstructured.Unstructured)
		if !isUnstructured {
			continue
		}
		rv = u.GetResourceVersion()
		key := u.GetNamespace() + "/" + u.GetName()
		switch ev.Type {
		case watch.Added, watch.Modified:
			v.reports[key] = u
		case watch.Deleted:
			delete(v.reports, key)
		default: // bookmarks only move the resource version
			continue
		}
		if err := v.printObjects(u); err != nil {
			return rv, err
		}
		if err := v.printTable(); err != nil {
			return rv, err
		}
	}
}

// printObjects prints obj for -o yaml/json without its managedFields; a no-op for tables.
func (v *statusView) printObjects(obj runtime.Unstructured) error {
	if v.output == "table" {
		return nil
	}
	content := obj.UnstructuredContent()
	if list, ok := obj.(*unstructured.UnstructuredList); ok {
		items := make([]any, 0, len(list.Items))
		for i := range list.Items {
			items = append(items, withoutManagedFields(list.Items[i].Object))
		}
		content = list.UnstructuredContent()
		content["items"] = items
	} else {
		content = withoutManagedFields(content)
	}
	var data []byte
	var err error
	if v.output == "json" {
		data, err = json.MarshalIndent(content, "", "    ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(content)
		if v.printed > 0 {
			data = append([]byte("---\n"), data...)
		}
	}
	if err != nil {
		return fmt.Errorf("encoding report as %s: %w", v.output, err)
	}
	v.printed++
	_, err = v.out.Write(data)
	return err
}

func withoutManagedFields(obj map[string]any) map[string]any {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	return u.Object
}

// printTable prints the table when it changed since the last one. When watching, a terminal is
// cleared first; elsewhere tables are separated by a blank line.
func (v *statusView) printTable() error {
	if v.output != "table" {
		return nil
	}
	text, err := v.table()
	if err != nil {
		return err
	}
	if text == v.lastTable {
		return nil
	}
	v.lastTable = text
	switch {
	case v.watching && v.tty:
		text = clearScreen + text
	case v.printed > 0:
		text = "\n" + text
	}
	v.printed++
	_, err = io.WriteString(v.out, text)
	return err
}

func (v *statusView) table() (string, error) {
	reports := make([]v1alpha1.MulticlusterApplicationSetReport, 0, len(v.reports))
	for _, u := range v.reports {
		var r v1alpha1.MulticlusterApplicationSetReport
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return "", fmt.Errorf("decoding report %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		reports = append(reports, r)
	}
	switch {
	case v.name != "" && len(reports) == 0:
		return fmt.Sprintf("The report of ApplicationSet %s/%s was deleted; waiting for it to come back.\n", v.namespace, v.name), nil
	case v.name != "":
		return reportview.Report(&reports[0], v.opts), nil
	case len(reports) == 0 && v.opts.AllNamespaces:
		return "No reports on the hub: no ApplicationSet has pull-model Applications yet.\n", nil
	case len(reports) == 0:
		return fmt.Sprintf("No reports in namespace %s (try --all-namespaces).\n", v.namespace), nil
	}
	return reportview.List(reports, v.opts), nil
}
