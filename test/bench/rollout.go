// The rollout scenarios: a revision committed to RollingSync ApplicationSets walks through the
// fleet step by step, driven by the real ApplicationSet controller, delivered by argocd-pull, and
// synced by the simulated clusters in a set time. See docs/benchmarks.md.

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/simagent"
	"github.com/argocd-pull/argocd-pull/test/bench/benchresults"
)

type rolloutConfig struct {
	syncFor    time.Duration // each simulated sync's length
	compare    time.Duration // each simulated comparison's length (simagent.Behaviour.Compare)
	steps      int           // RollingSync steps
	concurrent int           // ApplicationSets rolling out at once in the last scenario (<2: skipped)
	// scenarios are the scenarios to run after the first rollout (which every other needs).
	scenarios map[string]bool
	// appSetQPS is the ApplicationSet controller's client limit (ARGOCD_K8S_CLIENT_QPS; its burst
	// is twice that, as Argo CD's default).
	appSetQPS float64
	// appSetMaxResources caps the resources the ApplicationSet controller keeps in an
	// ApplicationSet's status (ARGOCD_APPLICATIONSET_CONTROLLER_MAX_RESOURCES_STATUS_COUNT; 0: all,
	// Argo CD's default).
	appSetMaxResources int
	// push runs the limit scenario: the same hub without argocd-pull, the clusters' Argo CD
	// syncing the hub Applications themselves (simagent.Push).
	push bool
	// limit runs the limit scenario after the pull model's at each size.
	limit bool
	// templating is how the rollout ApplicationSets' templates are rendered: templatingGo, or
	// templatingDefault (Argo CD's default, as the documents' examples).
	templating string
}

// The rollout ApplicationSets' templating (--applicationset-templating).
const (
	// templatingGo: goTemplate with sprig, the step derived from the cluster's name by the
	// clusterDecisionResource generator's parameters.
	templatingGo = "go"
	// templatingDefault: Argo CD's default templating ({{name}}), as the documents' examples, over
	// the cluster generator, the step taken from the cluster's label (the GitOpsCluster copies a
	// ManagedCluster's labels to its cluster secret).
	templatingDefault = "default"
)

// logPrefix tells the limit scenario's logs from the pull model's.
func (rc rolloutConfig) logPrefix() string {
	if rc.push {
		return "limit-"
	}
	return ""
}

// describeHub says what runs between the ApplicationSet controller and the clusters.
func (rc rolloutConfig) describeHub(clusters int) string {
	if rc.push {
		return fmt.Sprintf("no argocd-pull: the limit scenario, %d clusters' Argo CD syncing the hub Applications", clusters)
	}
	return fmt.Sprintf("argocd-pull; the GitOpsCluster registered %d clusters", clusters)
}

// The rollout scenarios that --rollout-scenarios names, in the order they run.
var rolloutScenarios = []string{"new-revision", "second-commit", "failing-revision", "no-rollingsync", "concurrent"}

// parseRolloutScenarios reads --rollout-scenarios: a comma-separated subset of rolloutScenarios;
// empty runs the first rollout alone.
func parseRolloutScenarios(list string) (map[string]bool, error) {
	out := map[string]bool{}
	if strings.TrimSpace(list) == "" {
		return out, nil
	}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(rolloutScenarios, s) {
			return nil, fmt.Errorf("--rollout-scenarios: %q is none of %s", s, strings.Join(rolloutScenarios, ", "))
		}
		out[s] = true
	}
	return out, nil
}

// failingSuffix marks the targetRevisions whose sync fails on every simulated cluster.
const failingSuffix = "-fails"

// rolloutAppSet is an ApplicationSet of the documents' pull-model template over the bench
// placement's clusters. With steps > 0, each Application is labelled with its step, (its
// cluster's number - 1) mod steps, which the template derives from the cluster's name. Rolling,
// the ApplicationSet has a RollingSync in those steps; otherwise it has no strategy, and the
// Applications sync themselves (automated policy).
func rolloutAppSet(name, revision string, steps int, rolling bool, templating string) *unstructured.Unstructured {
	labels := map[string]any{api.PullLabel: "true"}
	syncPolicy := map[string]any{"syncOptions": []any{"CreateNamespace=true"}}
	clusterName := "{{ .name }}"
	spec := map[string]any{
		"goTemplate":        true,
		"goTemplateOptions": []any{"missingkey=error"},
		"generators": []any{map[string]any{"clusterDecisionResource": map[string]any{
			"configMapRef":        "ocm-placement-generator",
			"labelSelector":       map[string]any{"matchLabels": map[string]any{"cluster.open-cluster-management.io/placement": rolloutPlacement}},
			"requeueAfterSeconds": int64(180),
		}}},
	}
	if steps > 0 {
		labels[stepLabel] = fmt.Sprintf(`{{ mod (sub (atoi (trimPrefix "cluster" .name)) 1) %d }}`, steps)
	}
	if templating == templatingDefault {
		clusterName = "{{name}}"
		spec = map[string]any{"generators": []any{map[string]any{"clusters": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{clusterv1beta2.ClusterSetLabel: clusterSet}},
		}}}}
		if steps > 0 {
			labels[stepLabel] = "{{metadata.labels." + stepLabel + "}}"
		}
	}
	if rolling {
		spec["strategy"] = rollingSync(steps)
	} else {
		syncPolicy["automated"] = map[string]any{"prune": true}
	}
	spec["template"] = map[string]any{
		"metadata": map[string]any{
			"name":   clusterName + "-" + name,
			"labels": labels,
			"annotations": map[string]any{
				api.ClusterAnnotation:          clusterName,
				api.AppNamespaceAnnotation:     argoNamespace,
				argocd.SkipReconcileAnnotation: "true",
			},
		},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": revision},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
			"syncPolicy":  syncPolicy,
		},
	}
	set := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	set.SetGroupVersionKind(argocd.ApplicationSetGVK)
	set.SetNamespace(argoNamespace)
	set.SetName(name)
	return set
}

// rollingSync is the RollingSync strategy over the step label's values 0..steps-1, a step each.
func rollingSync(steps int) map[string]any {
	var list []any
	for s := range steps {
		list = append(list, map[string]any{"matchExpressions": []any{map[string]any{"key": stepLabel, "operator": "In", "values": []any{fmt.Sprint(s)}}}})
	}
	return map[string]any{"type": "RollingSync", "rollingSync": map[string]any{"steps": list}}
}

// setStrategy replaces the ApplicationSet's strategy.
func (h *rolloutHub) setStrategy(ctx context.Context, appSet string, strategy map[string]any) error {
	return h.patchSpec(ctx, appSet, map[string]any{"strategy": strategy})
}

// commit changes the revision the ApplicationSet's template deploys, as a commit to the file
// that holds it would.
func (h *rolloutHub) commit(ctx context.Context, appSet, revision string) error {
	return h.patchSpec(ctx, appSet, map[string]any{"template": map[string]any{"spec": map[string]any{"source": map[string]any{"targetRevision": revision}}}})
}

// patchSpec merges spec into the ApplicationSet's spec (a list in it replaces the list there).
func (h *rolloutHub) patchSpec(ctx context.Context, appSet string, spec map[string]any) error {
	patch, _ := json.Marshal(map[string]any{"spec": spec})
	set := &unstructured.Unstructured{}
	set.SetGroupVersionKind(argocd.ApplicationSetGVK)
	set.SetNamespace(argoNamespace)
	set.SetName(appSet)
	return h.c.Patch(ctx, set, client.RawPatch(types.MergePatchType, patch))
}

// await waits until every Application of appSets (clusters each) is done at revision, and returns
// the rollout's figures since start.
func (h *rolloutHub) await(ctx context.Context, what string, appSets []string, clusters int, start time.Time, revision string, steps int, syncFor time.Duration) (benchresults.Rollout, error) {
	commit := simagent.Resolve(revision)
	want := clusters * len(appSets)
	// It gives up once nothing moved (no Application requested, started or done at revision) for
	// stall, however long the whole takes: ten RollingSync ApplicationSets of 1,000 clusters each
	// took more than the 50 minutes a fixed patience gave them, and no sync started in their first
	// 13 minutes.
	stall := 5*time.Minute + time.Duration(want)*50*time.Millisecond + syncFor
	began := h.cpuClock()
	written, _ := h.apiserverWrites(ctx)
	asked := h.scrape(ctx)
	err := waitForProgress(ctx, stall, what, h.logPath, func() (bool, int, string) {
		done, requested, started := 0, 0, 0
		h.obs.each(appSets, func(a *observed) {
			if _, ok := a.done[commit]; ok {
				done++
			}
			if _, ok := a.requested[commit]; ok {
				requested++
			}
			if _, ok := a.started[commit]; ok {
				started++
			}
		})
		return done == want, done + requested + started, fmt.Sprintf("%d of %d Applications done (%d requested, %d started on their clusters)", done, want, requested, started)
	})
	figures := rolloutFigures(h.obs.snapshot(appSets...), start, commit, max(steps, 1), syncFor)
	cpu := h.cpuClock().since(began)
	figures.CPU = &cpu
	if now := h.scrape(ctx); asked.Requests != nil && now.Requests != nil {
		figures.ControllerRequests = grown(asked.Requests, now.Requests)
		if len(now.ByResource) > 0 {
			figures.ControllerRequestsByResource = grown(asked.ByResource, now.ByResource)
		}
		figures.Reconciles = reconcilesBetween(asked, now)
	}
	if now, err := h.apiserverWrites(ctx); err == nil && written != nil {
		figures.APIServerWrites = grown(written, now)
	}
	if err != nil {
		// ctx may be done (the run stopped): the explanation reads on its own.
		explainCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for _, name := range stalled(h.obs.snapshot(appSets...), commit, 3) {
			err = fmt.Errorf("%w\n%s", err, h.explain(explainCtx, name))
		}
		cancel()
	}
	return figures, err
}

// stalled names up to n Applications not done at commit, those furthest along first: requested
// but not started on their cluster, then started but not done, then the rest (by name in each), so
// that a stalled rollout explains the Applications its step waits for.
func stalled(apps []observed, commit string, n int) []string {
	rank := func(a observed) int {
		_, requested := a.requested[commit]
		_, started := a.started[commit]
		switch {
		case requested && !started:
			return 0
		case started:
			return 1
		}
		return 2
	}
	var out []observed
	for _, a := range apps {
		if _, ok := a.done[commit]; !ok {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b observed) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.name, b.name))
	})
	names := make([]string, 0, n)
	for _, a := range out[:min(n, len(out))] {
		names = append(names, a.name)
	}
	return names
}

// explain describes one Application that did not arrive: the hub Application's request and
// operation, its work's deliveries, and the simulated cluster's Application.
func (h *rolloutHub) explain(ctx context.Context, name string) string {
	app := argocd.NewApplication()
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: argoNamespace, Name: name}, app); err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	status, _, _ := unstructured.NestedMap(app.Object, "status")
	delete(status, "resources")
	delete(status, "history")
	hub, _ := json.Marshal(map[string]any{"operation": app.Object["operation"], "status": status})
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s on the hub: %s\n", name, hub)
	for _, owner := range app.GetOwnerReferences() {
		set := &unstructured.Unstructured{}
		set.SetGroupVersionKind(argocd.ApplicationSetGVK)
		if owner.Kind != argocd.ApplicationSetGVK.Kind || h.c.Get(ctx, types.NamespacedName{Namespace: argoNamespace, Name: owner.Name}, set) != nil {
			continue
		}
		entries, _, _ := unstructured.NestedSlice(set.Object, "status", "applicationStatus")
		for _, e := range entries {
			if e, ok := e.(map[string]any); ok && e["application"] == name {
				entry, _ := json.Marshal(e)
				fmt.Fprintf(b, "its ApplicationSet %s's status of it: %s\n", owner.Name, entry)
			}
		}
	}
	key := types.NamespacedName{Namespace: app.GetAnnotations()[api.ClusterAnnotation], Name: manifestwork.WorkName(argoNamespace, name)}
	w := &workv1.ManifestWork{}
	if err := h.c.Get(ctx, key, w); err == nil {
		op, _ := manifestwork.PayloadRequests(w)
		fmt.Fprintf(b, "its work (generation %d): deliveries %s, payload .operation %v\n", w.Generation, w.Annotations[api.DeliveriesAnnotation], op)
	}
	if sim, ok := h.simApp(key, types.NamespacedName{Namespace: argoNamespace, Name: name}); ok {
		running, _ := sim.Syncing()
		fmt.Fprintf(b, "on its cluster: .operation %v, operationState %v, sync starts by delivery %v, running %q, deployed %q", sim.Object["operation"],
			sim.Object["status"].(map[string]any)["operationState"], sim.Starts, running, sim.Deployed())
	}
	return b.String()
}

// measureRollouts runs the rollout scenarios at one size on a fresh hub; keep is called with the
// result after each scenario, so that a later one that fails keeps the earlier ones.
func measureRollouts(ctx context.Context, cfg config, rc rolloutConfig, clusters int, keep func(benchresults.RolloutResult) error) (res benchresults.RolloutResult, err error) {
	res = benchresults.RolloutResult{Clusters: clusters, SyncSeconds: rc.syncFor.Seconds(), CompareSeconds: rc.compare.Seconds(), Steps: rc.steps, ApplicationSetClientQPS: rc.appSetQPS,
		ApplicationSetMaxResourcesStatusCount: rc.appSetMaxResources, Templating: rc.templating}
	b := simagent.Behaviour{SyncDuration: rc.syncFor, Fails: func(target string) bool { return strings.HasSuffix(target, failingSuffix) },
		Resync: cfg.resync, Jitter: cfg.jitter, Compare: rc.compare}
	f := newFleet(clusters, 0)
	f.steps = rc.steps
	h, err := startRolloutHub(ctx, cfg, rc, f, b)
	if err != nil {
		return res, err
	}
	defer h.stop()
	finish := func() error {
		res.AgentWrites, res.Redeliveries = h.agentWrites(), h.redeliveries()
		if h.ctl != nil {
			if u, err := h.ctl.usage(); err == nil {
				res.Controller = u
			}
		}
		if u, err := procUsage(h.appSets.PID()); err == nil {
			res.ApplicationSetController = u
		}
		if log, err := os.ReadFile(h.appSetsLog); err == nil {
			if d := reconcileDurations(log); len(d) > 0 {
				p := sorted(d)
				res.ApplicationSetReconcile = &p
			}
		}
		return keep(res)
	}
	report := func(name string, r benchresults.Rollout) {
		cfg.progress("%s: %.1fs for %d Applications (%.2fx the agents' %.0fs), %.2f syncs each; hub added per step %s; request lag %s; request to sync start %s; sync end to the hub %s",
			name, r.Seconds, r.Applications, r.Ratio, r.AgentsSeconds, r.SyncsPerApplication, r.HubAddedPerStep, r.RequestLag, r.Delivery, r.Status)
	}

	// A new RollingSync ApplicationSet: its first revision, step by step. Every other scenario
	// starts from it.
	start := time.Now()
	if err := h.c.Create(ctx, rolloutAppSet("rollout01", "v1", rc.steps, true, rc.templating)); err != nil {
		return res, err
	}
	first, err := h.await(ctx, "the first rollout of a new ApplicationSet", []string{"rollout01"}, clusters, start, "v1", rc.steps, rc.syncFor)
	fromSet, fromOwn := firstDeliveries(h.obs.snapshot("rollout01"), start)
	first.FirstDelivery, first.FirstDeliveryFromCreation = &fromSet, &fromOwn
	res.FirstRollout = &first
	report("first rollout", first)
	cfg.progress("    first delivery per Application: %s; from its own creation %s", fromSet, fromOwn)
	if err := finishWith(finish, err); err != nil {
		return res, err
	}

	scenarios := []struct {
		name string
		run  func() error
	}{
		{"new-revision", func() error {
			next, err := h.newRevision(ctx, cfg, rc, clusters)
			res.NewRevision = &next
			report("new revision", next)
			for _, s := range next.Steps {
				cfg.progress("    step %2d: %4d Applications, done after %6.1fs, step %5.1fs, hub added %5.1fs", s.Step+1, s.Applications, s.DoneSeconds, s.Seconds, s.HubAdded)
			}
			return err
		}},
		{"second-commit", func() (err error) {
			// A second commit while the first is part-way through.
			if res.SecondCommit, err = h.secondCommit(ctx, cfg, rc, clusters); err == nil {
				report("a second commit mid-rollout", *res.SecondCommit.Rollout)
			}
			return err
		}},
		{"failing-revision", func() (err error) {
			// The rollout stops at the first step; the next revision goes through.
			if res.FailingRevision, err = h.failingRevision(ctx, cfg, rc, clusters); err == nil {
				report("after a failing revision, the next one", *res.FailingRevision.Fixed)
			}
			return err
		}},
		{"no-rollingsync", func() error {
			plain, err := h.withoutRollingSync(ctx, rc, clusters)
			res.NoRollingSync = plain
			if plain != nil {
				report("without RollingSync", *plain)
				if !rc.push {
					cfg.progress("    the report at the new revision after %.1fs", plain.ReportSeconds)
				}
			}
			return err
		}},
		{"concurrent", func() error {
			if rc.concurrent < 2 {
				return nil
			}
			concurrent, err := h.concurrentRollouts(ctx, cfg, rc, clusters)
			res.Concurrent = concurrent
			if concurrent != nil {
				report(fmt.Sprintf("%d ApplicationSets at once", concurrent.ApplicationSets), *concurrent)
			}
			return err
		}},
	}
	for _, s := range scenarios {
		if !rc.scenarios[s.name] {
			continue
		}
		if err := finishWith(finish, s.run()); err != nil {
			return res, err
		}
	}
	return res, nil
}

// firstDeliveries is, per Application on its cluster, the time from its ApplicationSet's creation
// at start, and from its own creation on the hub, until its cluster held it.
func firstDeliveries(apps []observed, start time.Time) (fromSet, fromOwn benchresults.Percentiles) {
	var set, own []time.Duration
	for _, a := range apps {
		if a.onCluster.IsZero() {
			continue
		}
		set = append(set, a.onCluster.Sub(start))
		if !a.created.IsZero() {
			own = append(own, a.onCluster.Sub(a.created))
		}
	}
	return sorted(set), sorted(own)
}

// finishWith records the result so far and returns err, or the recording's error.
func finishWith(finish func() error, err error) error {
	if ferr := finish(); err == nil {
		return ferr
	}
	return err
}

// writeRolloutResults writes results.json and results.md of the rollout scenarios into dir.
func writeRolloutResults(report benchresults.RolloutReport, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(report.RolloutMarkdown()), 0o644)
}

// grown is what each counter of now gained since before, those that did.
func grown(before, now map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range now {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}
