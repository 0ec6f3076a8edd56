package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/argocd-pull/argocd-pull/internal/report"
)

// reportPacer remembers when each report was last written, so that large reports are written at
// a bounded rate (report.WriteInterval): what changes meanwhile waits for the next write.
type reportPacer struct {
	mu      sync.Mutex
	written map[types.NamespacedName]time.Time
}

// wait says how long the report key must wait, at now, before its next write, given the interval
// between its writes.
func (p *reportPacer) wait(key types.NamespacedName, interval time.Duration, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return report.NextWrite(p.written[key], now, interval)
}

// wrote records a write of the report key at a time.
func (p *reportPacer) wrote(key types.NamespacedName, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written == nil {
		p.written = map[types.NamespacedName]time.Time{}
	}
	p.written[key] = at
}

// forget drops a deleted report.
func (p *reportPacer) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.written, key)
}
