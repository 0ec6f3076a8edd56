package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/manifestwork"
	"github.com/argocd-pull/argocd-pull/internal/repocreds"
)

// BenchmarkCredentialsOfAFleet measures what one private repository's credential costs a fleet: 1,000
// clusters (BENCH_CREDENTIALS_CLUSTERS), each with a delivered Application on that repository, and
// the credential opted in, with the real manager and apiserver and each cluster's agent answering
// its carrier as the OCM work agent does (every copy absent at first). It reports, per cluster, the
// carriers (works) and the carrier writes (spec generations: the read-only ask, then the hold) once
// every cluster holds its copy, and the writes one rotation of the password takes; and the seconds
// each took for the whole fleet. Run it with -benchtime=1x.
//
//	go test -run '^$' -bench '^BenchmarkCredentialsOfAFleet$' -benchtime=1x ./internal/controller
func BenchmarkCredentialsOfAFleet(b *testing.B) {
	clusters := 1000
	if n, err := strconv.Atoi(os.Getenv("BENCH_CREDENTIALS_CLUSTERS")); err == nil && n > 0 {
		clusters = n
	}
	for range b.N {
		benchmarkCredentials(b, clusters)
	}
}

func benchmarkCredentials(b *testing.B, clusters int) {
	h := start(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.answerCarriers(ctx)

	// One ManagedClusterSet bound to the Argo CD namespace holds every cluster.
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "set-" + h.ns}}
	h.create(set)
	h.create(&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: h.ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set.Name}})
	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("%s-c%04d", h.ns[:min(len(h.ns), 40)], i)
	}
	begin := time.Now()
	var wg sync.WaitGroup
	next := make(chan string)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				h.create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set.Name}},
					Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
				h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}})
				h.app("app-"+c, c, fromRepo(privateRepo))
				h.work("app-"+c, c)
			}
		}()
	}
	for _, c := range names {
		next <- c
	}
	close(next)
	wg.Wait()
	b.Logf("%d clusters with a delivered Application each in %s", clusters, time.Since(begin).Round(time.Second))

	held := func(password string) (generations int64, done int) {
		list := &workv1.ManifestWorkList{}
		h.g.Expect(h.c.List(context.Background(), list, client.MatchingLabels{manifestwork.CredentialsLabel: "true"})).To(Succeed())
		for i := range list.Items {
			w := &list.Items[i]
			generations += w.Generation
			if copies(w)["private-repo"] == password {
				done++
			}
		}
		return generations, done
	}
	waitHeld := func(password string) (int64, time.Duration) {
		start := time.Now()
		for {
			generations, done := held(password)
			if done == clusters {
				return generations, time.Since(start)
			}
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("%d of %d clusters hold the copy after %s", done, clusters, time.Since(start))
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	b.ResetTimer()
	h.credential("private-repo", repocreds.Repository, privateRepo, "", "first", true)
	generations, took := waitHeld("first")
	list := &workv1.ManifestWorkList{}
	h.g.Expect(h.c.List(context.Background(), list, client.MatchingLabels{manifestwork.CredentialsLabel: "true"})).To(Succeed())
	b.ReportMetric(float64(len(list.Items))/float64(clusters), "works/cluster")
	b.ReportMetric(float64(generations)/float64(clusters), "writes/cluster")
	b.ReportMetric(took.Seconds(), "fleet-s")

	h.updateSecret("private-repo", func(s *corev1.Secret) { s.Data["password"] = []byte("second") })
	rotated, took := waitHeld("second")
	b.ReportMetric(float64(rotated-generations)/float64(clusters), "rotation-writes/cluster")
	b.ReportMetric(took.Seconds(), "rotation-s")
	b.StopTimer()
}

// answerCarriers answers every carrier as its cluster's work agent would, about its current
// generation, until ctx ends: a held copy present as argocd-pull's, the others absent.
func (h *harness) answerCarriers(ctx context.Context) {
	for ctx.Err() == nil {
		list := &workv1.ManifestWorkList{}
		if err := h.c.List(ctx, list, client.MatchingLabels{manifestwork.CredentialsLabel: "true"}); err == nil {
			for i := range list.Items {
				w := &list.Items[i]
				if c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); c != nil && c.ObservedGeneration == w.Generation {
					continue
				}
				answerCarrier(w)
				_ = h.c.Status().Update(ctx, w)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}
