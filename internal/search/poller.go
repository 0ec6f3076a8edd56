package search

import (
	"context"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Poller asks Search, every Interval, about the Applications the report controller tracks, keeps
// the answers for the reports to read, and calls Changed with the ApplicationSets whose answers
// changed. It runs on the leader only (a manager Runnable).
type Poller struct {
	Client   *Client
	Interval time.Duration
	// Tracked lists the Applications to ask about, each with its ApplicationSet.
	Tracked func(ctx context.Context) (map[AppKey]types.NamespacedName, error)
	// Changed is called with the ApplicationSets whose results changed.
	Changed func(appSets []types.NamespacedName)

	mu      sync.RWMutex
	results map[AppKey]Result
}

// Get returns what Search knows about an Application.
func (p *Poller) Get(key AppKey) (Result, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	r, ok := p.results[key]
	return r, ok
}

// Start polls until ctx ends. A failed poll is logged and keeps the previous answers.
func (p *Poller) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("search")
	ticker := time.NewTicker(p.Interval)
	defer ticker.Stop()
	for {
		if err := p.poll(ctx); err != nil {
			log.Error(err, "Polling OCM Search; the reports keep the previous answers")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

func (p *Poller) poll(ctx context.Context) error {
	tracked, err := p.Tracked(ctx)
	if err != nil {
		return err
	}
	keys := make([]AppKey, 0, len(tracked))
	for k := range tracked {
		keys = append(keys, k)
	}
	results, err := p.Client.Applications(ctx, keys)
	if err != nil {
		return err
	}
	changed := map[types.NamespacedName]bool{}
	p.mu.Lock()
	for k, appSet := range tracked {
		before, had := p.results[k]
		after, has := results[k]
		if had != has || !reflect.DeepEqual(before, after) {
			changed[appSet] = true
		}
	}
	p.results = results
	p.mu.Unlock()
	if len(changed) > 0 && p.Changed != nil {
		list := make([]types.NamespacedName, 0, len(changed))
		for k := range changed {
			list = append(list, k)
		}
		p.Changed(list)
	}
	return nil
}
