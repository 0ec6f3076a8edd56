package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

//go:embed web
var web embed.FS

// ServerOptions tune the page's server.
type ServerOptions struct {
	// ArgoCDURL is the hub Argo CD's web address; a cell links its hub Application there.
	ArgoCDURL string
	// Coalesce gathers changes into one delta per page at most this often. Default 200ms.
	Coalesce time.Duration
	// Tick is how often staleness is judged again. Default 5s.
	Tick time.Duration
	// AllowedHosts are the Host header values accepted besides loopback names and addresses
	// (a page served on all interfaces adds its own names). Requests naming another host are
	// refused: a page on the loopback must not answer a site the browser reached by DNS
	// rebinding, which would read the fleet with the caller's rights.
	AllowedHosts []string
	// LoopbackCallersOnly refuses every caller whose connection does not come from the loopback,
	// whatever Host it names: the controller's page reads with the controller's rights, and the
	// Host header is the caller's to choose.
	LoopbackCallersOnly bool
}

// Handler serves the page, its assets and its API:
//
//	GET /                   the page
//	GET /api/snapshot       the whole fleet (JSON)
//	GET /api/events         a snapshot, then deltas (Server-Sent Events)
//	GET /api/detail?app=K   one hub Application's detail (K: "<namespace>/<name>")
//	GET /healthz            ok
func Handler(fleet *Fleet, o ServerOptions) http.Handler {
	if o.Coalesce <= 0 {
		o.Coalesce = 200 * time.Millisecond
	}
	assets, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(assets))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /api/config", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"argocdURL": o.ArgoCDURL})
	})
	mux.HandleFunc("GET /api/snapshot", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, fleet.Snapshot()) })
	mux.HandleFunc("GET /api/detail", func(w http.ResponseWriter, r *http.Request) {
		d, ok := fleet.Detail(r.URL.Query().Get("app"))
		if !ok {
			http.Error(w, "no pull-model Application "+r.URL.Query().Get("app"), http.StatusNotFound)
			return
		}
		writeJSON(w, d)
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) { events(w, r, fleet, o.Coalesce) })
	return guard(mux, o)
}

// events streams a snapshot, then a delta per change, gathered for the coalescing window.
func events(w http.ResponseWriter, r *http.Request, fleet *Fleet, coalesce time.Duration) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	snapshot, stream := fleet.Subscribe()
	defer stream.Close()
	if send(w, "snapshot", snapshot) != nil {
		return
	}
	flusher.Flush()
	keepAlive := time.NewTicker(30 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-stream.Changed():
			select {
			case <-r.Context().Done():
				return
			case <-time.After(coalesce):
			}
			if d := stream.Next(); !d.Empty() {
				if send(w, "delta", d) != nil {
					return
				}
				flusher.Flush()
			}
		}
	}
}

func send(w http.ResponseWriter, event string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
	return err
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// guard refuses requests for other hosts (DNS rebinding) and sets the headers that keep the page
// from running anything but its own script: what tenants and managed clusters write (names,
// messages) is shown as text, and a Content-Security-Policy without inline script backs that up.
func guard(next http.Handler, o ServerOptions) http.Handler {
	allowed := o.AllowedHosts
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.LoopbackCallersOnly && !loopbackCaller(r.RemoteAddr) {
			http.Error(w, "the fleet view answers loopback callers only: reach it with kubectl port-forward", http.StatusForbidden)
			return
		}
		if !hostAllowed(r.Host, allowed) {
			http.Error(w, fmt.Sprintf("host %q is not served: open the address the dashboard printed", r.Host), http.StatusForbidden)
			return
		}
		if r.Header.Get("Origin") != "" && !originAllowed(r.Header.Get("Origin"), allowed) {
			http.Error(w, "cross-origin requests are not served", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// hostAllowed: loopback names and addresses, and the allowed hosts, with any port.
func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(host, a) {
			return true
		}
	}
	return false
}

// loopbackCaller: the connection's far end is a loopback address.
func loopbackCaller(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckLoopbackBind refuses a listen address that is not on the loopback: an empty host (":8090",
// every interface), an unspecified address (0.0.0.0, ::), any other address, or a name other
// than localhost. A page that reads with the controller's rights is served to the loopback only.
func CheckLoopbackBind(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("%q listens on %s, not on the loopback: the fleet view reads every tenant's Applications with the controller's rights, so it is served on a loopback address only (such as 127.0.0.1:8090); reach it with kubectl port-forward", addr, host)
}

func originAllowed(origin string, allowed []string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && hostAllowed(u.Host, allowed)
}

// Serve serves the page on listener until ctx ends, and judges staleness again every o.Tick.
func Serve(ctx context.Context, listener net.Listener, fleet *Fleet, o ServerOptions) error {
	if o.Tick <= 0 {
		o.Tick = 5 * time.Second
	}
	srv := &http.Server{Handler: Handler(fleet, o), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		t := time.NewTicker(o.Tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = srv.Shutdown(shutdown)
				return
			case <-t.C:
				fleet.Tick()
			}
		}
	}()
	if err := srv.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
