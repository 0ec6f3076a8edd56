package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/api/v1alpha1"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// prices is what one write of each kind costs the apiserver (and etcd) in CPU, measured one
// request at a time on the size's fresh apiserver: the price list that bounds every figure. A
// report write costs in proportion to its cluster entries.

// priceRevision is a revision as Git gives it (the fleet's revisions are shorter).
const priceRevision = "3f5c2a9e0b7d41c8a6e2f9b0d3c7a1e4b8f2d6c0"

// pricesNamespace holds what measurePrices writes; it is emptied afterwards.
const pricesNamespace = "bench-prices"

// probeEntries are the Applications one claim probe asks about in the price list: the fleet's
// Applications per cluster (--applicationsets, 10 by default), created before the controller
// starts, which one probe write covers.
const probeEntries = 10

// measurePrices writes, one at a time, n Applications' works and status patches, and a report of
// entries clusters several times, and divides the apiserver's CPU by the requests.
func measurePrices(ctx context.Context, c client.Client, n, entries int) (prices, error) {
	var p prices
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pricesNamespace}}); err != nil {
		return p, err
	}
	apps := make([]*unstructured.Unstructured, n)
	for i := range apps {
		apps[i] = pullApplication("prices", fmt.Sprintf("price%04d", i), metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "prices", UID: "prices"})
		apps[i].SetNamespace(pricesNamespace)
		if err := c.Create(ctx, apps[i]); err != nil {
			return p, err
		}
	}
	apiserverCPU := func(count int, do func(i int) error) (float64, float64, error) {
		before := readCPUClock(nil)
		for i := range count {
			if err := do(i); err != nil {
				return 0, 0, err
			}
		}
		used := readCPUClock(nil).since(before)
		return used.APIServer * 1000 / float64(count), used.Etcd * 1000 / float64(count), nil
	}
	// The writes that deliver an Application, in their order (see manifestwork/claim.go): the
	// pending work's create and its agent's answer (the name is free), the hold and the agent's
	// answer with the Application's first status; the status patch of the hub Application below.
	works := make([]*workv1.ManifestWork, n)
	var err error
	if p.WorkCreateMs, _, err = apiserverCPU(n, func(i int) error {
		target, _, err := manifestwork.ReadMarkers(apps[i])
		if err != nil {
			return err
		}
		w, err := manifestwork.DesiredWork(apps[i], nil, target, manifestwork.Deliveries{})
		if err != nil {
			return err
		}
		w.Namespace = pricesNamespace
		works[i] = w
		return c.Create(ctx, w)
	}); err != nil {
		return p, fmt.Errorf("creating works: %w", err)
	}
	answer := func(w *workv1.ManifestWork, values map[string]string) error {
		testenv.SetAgentStatus(w, w.Generation, w.Annotations[api.HubApplicationNamespaceAnnotation], w.Annotations[api.HubApplicationNameAnnotation], values)
		return c.Status().Update(ctx, w)
	}
	if p.ClaimAnswerMs, _, err = apiserverCPU(n, func(i int) error { return answer(works[i], nil) }); err != nil {
		return p, fmt.Errorf("answering the pending works: %w", err)
	}
	if p.HoldMs, _, err = apiserverCPU(n, func(i int) error {
		held, err := manifestwork.Hold(works[i])
		if err != nil {
			return err
		}
		works[i].Spec, works[i].Annotations = held.Spec, held.Annotations
		return c.Update(ctx, works[i])
	}); err != nil {
		return p, fmt.Errorf("holding the works: %w", err)
	}
	if p.HeldAnswerMs, _, err = apiserverCPU(n, func(i int) error { return answer(works[i], initialFeedback()) }); err != nil {
		return p, fmt.Errorf("answering the held works: %w", err)
	}
	// What a work that carries its Application from its create costs, as a controller without
	// the claim writes it.
	if p.HeldWorkCreateMs, _, err = apiserverCPU(n, func(i int) error {
		held, err := manifestwork.Hold(works[i])
		if err != nil {
			return err
		}
		direct := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: pricesNamespace, Name: "direct-" + held.Name,
			Labels: held.Labels, Annotations: held.Annotations}, Spec: held.Spec}
		return c.Create(ctx, direct)
	}); err != nil {
		return p, fmt.Errorf("creating held works: %w", err)
	}
	if p.AppStatusPatchMs, _, err = apiserverCPU(n, func(i int) error {
		updated := apps[i].DeepCopy()
		updated.Object["status"] = map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": priceRevision},
			"health": map[string]any{"status": "Healthy"},
			"operationState": map[string]any{"phase": "Succeeded", "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:05Z",
				"operation": map[string]any{"sync": map[string]any{"revision": priceRevision}}},
		}
		return c.Patch(ctx, updated, client.MergeFrom(apps[i]))
	}); err != nil {
		return p, fmt.Errorf("patching Application status: %w", err)
	}
	// The claim probe of a cluster with probeEntries new Applications, as the controller writes it
	// (controller/claims.go): created asking about them together, answered by the agent (every
	// name free), deleted once they are delivered. One cluster namespace holds one probe: each is
	// written, answered and deleted before the next.
	var probeWrite, probeAnswer, probeDelete float64
	probes := max(n/probeEntries, 1)
	for k := range probes {
		var entries []manifestwork.ProbeEntry
		for i := k * probeEntries; i < (k+1)*probeEntries && i < n; i++ {
			entries = append(entries, manifestwork.ProbeEntry{Namespace: argoNamespace, Name: apps[i].GetName(), Hub: client.ObjectKeyFromObject(apps[i])})
		}
		probe, err := manifestwork.DesiredProbe(pricesNamespace, entries)
		if err != nil {
			return p, err
		}
		for _, step := range []struct {
			sum *float64
			do  func() error
		}{
			{&probeWrite, func() error { return c.Create(ctx, probe) }},
			{&probeAnswer, func() error { testenv.AnswerProbe(probe, nil); return c.Status().Update(ctx, probe) }},
			{&probeDelete, func() error { return c.Delete(ctx, probe) }},
		} {
			ms, _, err := apiserverCPU(1, func(int) error { return step.do() })
			if err != nil {
				return p, fmt.Errorf("the claim probe: %w", err)
			}
			*step.sum += ms
		}
	}
	p.ProbeEntries = probeEntries
	p.ProbeWriteMs, p.ProbeAnswerMs, p.ProbeDeleteMs = probeWrite/float64(probes), probeAnswer/float64(probes), probeDelete/float64(probes)
	p.DeliveryMs = p.WorkCreateMs + p.ClaimAnswerMs + p.HoldMs + p.HeldAnswerMs + p.AppStatusPatchMs
	p.UnclaimedDeliveryMs = p.HeldWorkCreateMs + p.HeldAnswerMs + p.AppStatusPatchMs
	p.ProbedDeliveryMs = (p.ProbeWriteMs+p.ProbeAnswerMs+p.ProbeDeleteMs)/float64(probeEntries) + p.UnclaimedDeliveryMs
	r := &v1alpha1.MulticlusterApplicationSetReport{ObjectMeta: metav1.ObjectMeta{Name: "prices", Namespace: pricesNamespace}}
	for k := range entries {
		cluster := fmt.Sprintf("cluster%04d", k)
		r.Statuses.ClusterConditions = append(r.Statuses.ClusterConditions, v1alpha1.ClusterCondition{
			Cluster: cluster, App: fmt.Sprintf("argocd/%s/%s/%s", appName("prices", cluster), cluster, manifestwork.WorkName(argoNamespace, appName("prices", cluster))),
			SyncStatus: "Synced", HealthStatus: "Healthy", OperationStatePhase: "Succeeded",
			OperationStateStartedAt: time.Now().UTC().Format(time.RFC3339), SyncRevision: priceRevision})
	}
	if err := c.Create(ctx, r); err != nil {
		return p, err
	}
	writes := 20
	perWrite, etcdPerWrite, err := apiserverCPU(writes, func(i int) error {
		r.Statuses.ClusterConditions[i%entries].SyncRevision = fmt.Sprintf("price-%d", i)
		return c.Update(ctx, r)
	})
	if err != nil {
		return p, fmt.Errorf("writing the report: %w", err)
	}
	p.ReportEntryMs, p.ReportEntryEtcdMs, p.ReportEntriesProbed = perWrite/float64(entries), etcdPerWrite/float64(entries), entries

	// Leave the apiserver as the size found it.
	for _, obj := range []client.Object{&workv1.ManifestWork{}, argocd.NewApplication(), &v1alpha1.MulticlusterApplicationSetReport{}} {
		if err := c.DeleteAllOf(ctx, obj, client.InNamespace(pricesNamespace)); err != nil {
			return p, err
		}
	}
	return p, nil
}
