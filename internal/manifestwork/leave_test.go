package manifestwork

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestHeldForStep(t *testing.T) {
	step := map[string]any{"initiatedBy": map[string]any{"username": RollingSyncUser, "automated": true}, "sync": map[string]any{}}
	byHand := map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{}}
	d := &Delivery{ID: "d1", Hash: ContentHash(step)}
	carried := Deliveries{Sync: d}
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	pending := at("2026-11-23T10:00:00Z") // the step's Pending, to the second
	settled := Reported{SyncStarted: "d1", Phase: "Succeeded", SyncStatus: "Synced", FinishedAt: "2026-11-23T10:00:06Z", ReconciledAt: "2026-11-23T10:00:06Z"}
	now := at("2026-11-23T10:00:07Z")
	failed := settled
	failed.Phase, failed.SyncStatus = "Failed", "OutOfSync"
	running := settled
	running.Phase, running.FinishedAt = "Running", ""
	tests := map[string]struct {
		op        map[string]any
		reported  Reported
		startedAt string
		step      string
		since     time.Time
		now       time.Time
		want      bool
		until     time.Time
	}{
		"succeeded, its step still Pending": {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Pending", since: pending, now: now, want: true,
			until: at("2026-11-23T10:00:06Z").Add(StepHoldLimit)},
		"moved on to Progressing by a reconcile that saw the end": {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Progressing", since: at("2026-11-23T10:00:06Z"), now: now, want: true,
			until: at("2026-11-23T10:00:06Z").Add(StepProgressingHold)},
		"Progressing for that long": {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Progressing", since: at("2026-11-23T10:00:06Z"), now: at("2026-11-23T10:00:16Z")},
		// The reconcile that moved it on while it ran may write the request again after its end
		// (as in the default templating's rollout at 1,000 clusters at 4d9f3ee: moved on a second
		// before the end, the request cleared at the end, then written again by that reconcile).
		"moved on while it ran": {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Progressing", since: at("2026-11-23T10:00:02Z"), now: now, want: true,
			until: at("2026-11-23T10:00:02Z").Add(StepProgressingHold)},
		"moved on while it ran, that long before":          {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Progressing", since: at("2026-11-23T10:00:02Z"), now: at("2026-11-23T10:00:12Z")},
		"Progressing since before it started":              {op: step, reported: settled, startedAt: "2026-11-23T10:00:03Z", step: "Progressing", since: at("2026-11-23T10:00:02Z"), now: now},
		"Healthy":                                          {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Healthy", since: now, now: now},
		"not in a step":                                    {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", now: now},
		"started in the step's own second: never moves on": {op: step, reported: settled, startedAt: "2026-11-23T10:00:00Z", step: "Pending", since: pending, now: now},
		"a request the ApplicationSet did not make":        {op: byHand, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Pending", since: pending, now: now},
		"failed: the ApplicationSet's retry":               {op: step, reported: failed, startedAt: "2026-11-23T10:00:01Z", step: "Pending", since: pending, now: now},
		"still running: not finished":                      {op: step, reported: running, startedAt: "2026-11-23T10:00:01Z", step: "Pending", since: pending, now: now},
		"past the limit":                                   {op: step, reported: settled, startedAt: "2026-11-23T10:00:01Z", step: "Pending", since: pending, now: at("2026-11-23T10:03:06Z")},
		"no start reported":                                {op: step, reported: settled, step: "Pending", since: pending, now: now},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			held, until := HeldForStep(Hub{Operation: tt.op}, carried, tt.reported, tt.startedAt, tt.step, tt.since, tt.now)
			g.Expect(held).To(Equal(tt.want))
			if held {
				g.Expect(until).To(Equal(tt.until), "held at most until then")
				g.Expect(InFlight(carried, tt.reported, true, held)).To(BeTrue(), "a held request is still in flight for the hub")
				g.Expect(Unsettled(carried, tt.reported, true, held)).To(BeTrue(), "the hub shows a held request's sync running")
			}
		})
	}
}

// A RollingSync step's sync request is delivered only while its step reads Pending: one the
// ApplicationSet asked for again after it moved the step on is a late repeat (argo-cd#21502).
func TestRepeatedStepSync(t *testing.T) {
	step := map[string]any{"initiatedBy": map[string]any{"username": RollingSyncUser, "automated": true}, "sync": map[string]any{}}
	byHand := map[string]any{"initiatedBy": map[string]any{"username": "admin"}, "sync": map[string]any{}}
	hash := ContentHash(step)
	planned := Deliveries{Sync: &Delivery{ID: "d2", Hash: hash}}
	finished := Deliveries{Sync: &Delivery{ID: "d1", Hash: hash}}
	tests := map[string]struct {
		hub     Hub
		carried Deliveries
		planned Deliveries
		step    string
		want    bool
	}{
		"Healthy: asked again after the step counted it":        {hub: Hub{Operation: step}, planned: planned, step: "Healthy", want: true},
		"Progressing: asked again in the reconcile moving it":   {hub: Hub{Operation: step}, planned: planned, step: "Progressing", want: true},
		"Waiting: asked again as a new revision came":           {hub: Hub{Operation: step}, planned: planned, step: "Waiting", want: true},
		"the step's finished request cleared, then asked again": {hub: Hub{Operation: step, SyncCleared: "d1"}, carried: finished, planned: planned, step: "Healthy", want: true},
		"Pending: the step's own request":                       {hub: Hub{Operation: step}, planned: planned, step: "Pending"},
		"no step: not a RollingSync member":                     {hub: Hub{Operation: step}, planned: planned},
		"a request made by hand":                                {hub: Hub{Operation: byHand}, planned: planned, step: "Healthy"},
		"carried already":                                       {hub: Hub{Operation: step}, carried: Deliveries{Sync: planned.Sync}, planned: planned, step: "Healthy"},
		// Argo CD dropped it before it started (syncLost): the same request, sent again.
		"the carried request sent again": {hub: Hub{Operation: step}, carried: finished, planned: planned, step: "Progressing"},
		"no request":                     {hub: Hub{Operation: step}, step: "Healthy"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(RepeatedStepSync(tt.hub, tt.carried, tt.planned, tt.step)).To(Equal(tt.want))
		})
	}
}
