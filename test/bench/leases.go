package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterLeaseName is the Lease OCM's registration agent renews in its cluster's namespace on the
// hub (open-cluster-management.io/ocm, pkg/registration/spoke/lease).
const clusterLeaseName = "managed-cluster-lease"

// leaseJitter is OCM's leaseUpdateJitterFactor: each renewal waits the lease duration plus up to a
// quarter of it.
const leaseJitter = 0.25

// newClusterLease is the Lease the hub's registration controller creates for an accepted cluster.
func newClusterLease(cluster string, duration time.Duration) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: clusterLeaseName, Namespace: cluster},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(clusterLeaseName),
			LeaseDurationSeconds: ptr.To(int32(duration / time.Second)),
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
}

// registrationAgents stand in for every cluster's registration agent on the hub: each renews its
// cluster's Lease every lease duration (plus jitter) by a GET and an UPDATE, as OCM's agent does.
type registrationAgents struct {
	c        client.Client
	clusters []string
	duration time.Duration
	writes   atomic.Int64 // lease updates sent
}

// run renews every cluster's lease until ctx ends; the first renewals are spread over one period.
func (r *registrationAgents) run(ctx context.Context) {
	if r.duration <= 0 {
		return
	}
	for _, cluster := range r.clusters {
		go func() {
			wait := time.Duration(rand.Int64N(int64(r.duration)))
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				if err := r.renew(ctx, cluster); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "simulated lease renewal of %s: %v\n", cluster, err)
				}
				wait = r.duration + time.Duration(rand.Float64()*leaseJitter*float64(r.duration))
			}
		}()
	}
}

func (r *registrationAgents) renew(ctx context.Context, cluster string) error {
	lease := &coordinationv1.Lease{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: clusterLeaseName}, lease); err != nil {
		return err
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	r.writes.Add(1)
	return r.c.Update(ctx, lease)
}
