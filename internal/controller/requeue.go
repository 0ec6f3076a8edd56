package controller

import "time"

// minRequeue is the least wait requeueAfter gives.
const minRequeue = 10 * time.Millisecond

// requeueAfter is the RequeueAfter that reconciles again at t, or at once (minRequeue) when t
// passed while the reconcile ran, as it may on a hub short of CPU. controller-runtime reads a
// RequeueAfter of zero or less as no requeue at all: what waited for t (a RollingSync step's sync
// request, a finished one held for its step) would then wait for an event that may never come.
func requeueAfter(t time.Time) time.Duration {
	return max(time.Until(t), minRequeue)
}
