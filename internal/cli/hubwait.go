package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/argocd-pull/argocd-pull/internal/hubapis"
)

// hubAPIPollInterval is how often a controller waiting for the hub's APIs looks again.
const hubAPIPollInterval = 5 * time.Second

// waitForHubAPIs returns once the hub serves every API the controllers use (hubapis.All). Until
// then the controller cannot build its caches: it says in its log what it waits for and how to
// install it, and its probes answer on probeAddr, /healthz ok and /readyz 503 with the same
// message, so that a Deployment rolled out before Argo CD or OCM waits, not crash-loops, and
// starts working when they are installed. A hub that does not answer discovery at all is an
// error (a wrong kubeconfig or an unreachable apiserver): the command exits with it.
func waitForHubAPIs(ctx context.Context, cfg *rest.Config, probeAddr string, log logr.Logger) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	served, err := hubapis.Served(dc)
	if err != nil {
		return fmt.Errorf("the hub apiserver %s did not answer: %w", cfg.Host, err)
	}
	waiting := hubapis.Waiting(hubapis.All, served)
	if waiting == "" {
		return nil
	}
	log.Info("Waiting for the hub's APIs before starting the controllers", "missing", waiting)

	probes, err := serveWaitingProbes(probeAddr, waiting)
	if err != nil {
		return err
	}
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = probes.Shutdown(shutdown)
	}()

	err = wait.PollUntilContextCancel(ctx, hubAPIPollInterval, false, func(context.Context) (bool, error) {
		served, err := hubapis.Served(dc)
		if err != nil {
			log.Info("The hub apiserver did not answer discovery; trying again", "error", err.Error())
			return false, nil
		}
		now := hubapis.Waiting(hubapis.All, served)
		if now != "" && now != *probes.message.Load() {
			log.Info("Still waiting for the hub's APIs", "missing", now)
			probes.message.Store(&now)
		}
		return now == "", nil
	})
	if err != nil {
		return nil // stopped while waiting: a clean exit, like a stopped manager
	}
	log.Info("The hub serves every API the controllers use; starting them")
	return nil
}

// waitingProbes are the health probes while the controller waits for the hub's APIs.
type waitingProbes struct {
	*http.Server
	message atomic.Pointer[string]
}

// serveWaitingProbes serves /healthz (ok: the process is alive and waits on purpose) and /readyz
// (503 with what is missing) on addr; "0" serves nothing.
func serveWaitingProbes(addr, message string) (*waitingProbes, error) {
	p := &waitingProbes{}
	p.message.Store(&message)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "waiting for the hub's APIs: %s\n", *p.message.Load())
	})
	p.Server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if addr == "0" || addr == "" {
		return p, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving the health probes on %s: %w", addr, err)
	}
	go func() { _ = p.Serve(ln) }()
	return p, nil
}

// hubReachable is the controller's readiness check of the hub apiserver: the apiserver's own
// /readyz answers ok within two seconds (any authenticated user may read it). While the hub
// apiserver or its etcd is down, the controller cannot write anything, and its /readyz says so
// rather than ok; it keeps running and resumes by itself when the hub is back.
func hubReachable(cfg *rest.Config) (func(*http.Request) error, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = 2 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("creating the hub readiness client: %w", err)
	}
	rc := dc.RESTClient()
	return func(req *http.Request) error {
		body, err := rc.Get().AbsPath("/readyz").Do(req.Context()).Raw()
		if err != nil {
			return fmt.Errorf("the hub apiserver %s is not ready: %w", cfg.Host, err)
		}
		if string(body) != "ok" {
			return fmt.Errorf("the hub apiserver %s is not ready: %s", cfg.Host, body)
		}
		return nil
	}, nil
}
