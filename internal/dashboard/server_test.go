package dashboard

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A page on the loopback must not answer a site the browser reached by DNS rebinding (the page
// reads the fleet with the caller's rights), nor another origin's script.
func TestServerRefusesOtherHostsAndOrigins(t *testing.T) {
	f := NewFleet(0)
	generate(t, f, 2, 1)
	srv := httptest.NewServer(Handler(f, ServerOptions{}))
	defer srv.Close()
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"the loopback address", "", "", http.StatusOK},
		{"localhost", "localhost:8090", "", http.StatusOK},
		{"IPv6 loopback", "[::1]:8090", "", http.StatusOK},
		{"the page's own origin", "", "http://127.0.0.1:8090", http.StatusOK},
		{"DNS rebinding", "attacker.example:8090", "", http.StatusForbidden},
		{"a rebinding name that starts like localhost", "localhost.attacker.example", "", http.StatusForbidden},
		{"another origin's script", "", "https://attacker.example", http.StatusForbidden},
		{"a null origin (sandboxed frame, file://)", "", "null", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/snapshot", nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == http.StatusForbidden && strings.Contains(string(body), "cluster-0000") {
				t.Errorf("a refused request got fleet data: %s", body)
			}
		})
	}
}

// The page and its API carry headers that allow no script but the page's own.
func TestServerHeaders(t *testing.T) {
	srv := httptest.NewServer(Handler(NewFleet(0), ServerOptions{}))
	defer srv.Close()
	for _, path := range []string{"/", "/app.js", "/api/snapshot"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
	}
}

// The event stream sends the snapshot, then each change as a delta.
func TestServerStreamsChanges(t *testing.T) {
	f := NewFleet(0)
	generate(t, f, 3, 2)
	srv := httptest.NewServer(Handler(f, ServerOptions{Coalesce: 10 * time.Millisecond}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	events := bufio.NewReader(resp.Body)
	name, data := readEvent(t, events)
	var s Snapshot
	if err := json.Unmarshal(data, &s); name != "snapshot" || err != nil || len(s.Entries) != 6 || len(s.Clusters) != 3 || len(s.AppSets) != 2 {
		t.Fatalf("first event %s (%v): %d entries, %d clusters, %d ApplicationSets", name, err, len(s.Entries), len(s.Clusters), len(s.AppSets))
	}
	f.SetCluster(genCluster(clusterName(1), nil, metav1.ConditionFalse))
	name, data = readEvent(t, events)
	var d Delta
	if err := json.Unmarshal(data, &d); name != "delta" || err != nil {
		t.Fatalf("second event %s: %v", name, err)
	}
	if len(d.Clusters) != 1 || d.Clusters[0].Available != "False" || len(d.Entries) != 2 {
		t.Fatalf("delta: %+v", d)
	}
	for _, e := range d.Entries {
		if e.Cluster != clusterName(1) || e.State != StateStale {
			t.Errorf("entry: %+v", e)
		}
	}
}

func readEvent(t *testing.T, r *bufio.Reader) (name string, data []byte) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = []byte(strings.TrimPrefix(line, "data: "))
		case line == "" && name != "":
			return name, data
		}
	}
}

// The controller's page answers only callers on the loopback: a pod elsewhere on the hub's network
// chooses its own Host header, so the header is no proof of where the caller is.
func TestLoopbackCallersOnlyRefusesACallerElsewhereWhateverItsHost(t *testing.T) {
	f := NewFleet(0)
	generate(t, f, 2, 1)
	h := Handler(f, ServerOptions{LoopbackCallersOnly: true})
	for _, tc := range []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:51000", http.StatusOK},
		{"[::1]:51000", http.StatusOK},
		{"10.244.1.7:51000", http.StatusForbidden},
		{"[fd00::7]:51000", http.StatusForbidden},
		{"not an address", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/snapshot", nil)
		req.Host, req.RemoteAddr = "localhost:8090", tc.remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("caller %s: status %d, want %d: %s", tc.remote, rec.Code, tc.want, rec.Body)
		}
		if tc.want == http.StatusForbidden && strings.Contains(rec.Body.String(), "cluster-0000") {
			t.Errorf("caller %s got fleet data: %s", tc.remote, rec.Body)
		}
	}
}

func TestCheckLoopbackBind(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8090": true, "localhost:8090": true, "[::1]:8090": true, "127.0.0.2:8090": true,
		":8090": false, "0.0.0.0:8090": false, "[::]:8090": false, "10.0.0.5:8090": false,
		"localhost.attacker.example:8090": false, "8090": false,
	} {
		err := CheckLoopbackBind(addr)
		if (err == nil) != ok {
			t.Errorf("%q: %v, want allowed=%v", addr, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "port-forward") && addr != "8090" {
			t.Errorf("%q: the refusal says not how to reach the page: %v", addr, err)
		}
	}
}
