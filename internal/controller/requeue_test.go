package controller

import (
	"testing"
	"time"
)

func TestRequeueAfterNeverAsksForNothing(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name string
		at   time.Time
		min  time.Duration
		max  time.Duration
	}{
		{"ahead", now.Add(time.Minute), 50 * time.Second, time.Minute},
		{"passed while the reconcile ran", now.Add(-300 * time.Millisecond), minRequeue, minRequeue},
		{"long past", now.Add(-time.Hour), minRequeue, minRequeue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := requeueAfter(tt.at)
			if got < tt.min || got > tt.max {
				t.Errorf("requeueAfter(now%+v) = %v, want within [%v, %v]", tt.at.Sub(now), got, tt.min, tt.max)
			}
		})
	}
}
