package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/argocd-pull/argocd-pull/internal/cli"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// fleetPage runs `argocd-pull dashboard` on the lab's hub, as a person would with the hub's
// kubeconfig, and opens it in headless Chromium once the first snapshot is drawn.
type fleetPage struct {
	ctx context.Context
	url string
}

func openFleetView(t *testing.T) *fleetPage {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	cmd := cli.NewRootCommand()
	cmd.SetArgs([]string{"dashboard", "--kubeconfig", lab.Hub.Kubeconfig, "-n", sandbox.ArgoNamespace, "--address", addr})
	cmd.SetOut(testWriter{t})
	go func() { done <- cmd.ExecuteContext(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("argocd-pull dashboard: %v", err)
		}
	})
	url := "http://" + addr + "/"
	eventually(t, "the dashboard serving", time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		resp, err := http.Get(url + "healthz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/healthz %d", resp.StatusCode)
	})
	p := &fleetPage{ctx: testenv.Browser(t, ctx), url: url}
	if err := chromedp.Do(p.ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first snapshot drawn", 30*time.Second, "hub-argocd-pull.log", func() (bool, error) {
		ready, err := p.eval(`window.fleetView && window.fleetView.ready`)
		return ready == true, err
	})
	return p
}

func (p *fleetPage) eval(expr string) (any, error) {
	return chromedp.Run(p.ctx, chromedp.Evaluate[any](expr))
}

// state is the state the page shows in the cell of cluster and the lab's ApplicationSet.
func (p *fleetPage) state(cluster string) string {
	v, _ := p.eval(fmt.Sprintf(`document.querySelector('.cell[data-cluster=%q][data-appset=%q]')?.dataset.state ?? ''`, cluster, sandbox.ArgoNamespace+"/"+sandbox.ApplicationSetName))
	s, _ := v.(string)
	return s
}

func (p *fleetPage) screenshot(t *testing.T, name string) { testenv.Screenshot(t, p.ctx, name) }

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("argocd-pull dashboard: %s", b)
	return len(b), nil
}
