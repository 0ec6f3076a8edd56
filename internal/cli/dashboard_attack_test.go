package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/argocd-pull/argocd-pull/internal/test/testenv"
)

// The controller's fleet view reads every tenant's Applications with the controller's rights. An
// operator who binds it to all interfaces (":8090", as the metrics are) must not hand that to any
// pod on the hub's network: a caller from another address that sends "Host: localhost" (the
// header is the caller's to choose) reads nothing, because the controller refuses to serve it off
// the loopback at all, and says so before it starts.
func TestTheControllersFleetViewServesNoCallerOffTheLoopback(t *testing.T) {
	env := testenv.Get(t)
	outside := nonLoopbackAddress(t)
	binds := []string{":%d", "0.0.0.0:%d", "[::]:%d"}
	if outside != "" {
		binds = append(binds, outside+":%d")
	} else {
		t.Log("this machine has no IPv4 address off the loopback to dial from: only the refusal is checked")
	}
	for _, bind := range binds {
		t.Run(bind, func(t *testing.T) {
			g := NewWithT(t)
			port := freePort(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := NewRootCommand()
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SetArgs([]string{"controller", "--kubeconfig", env.Kubeconfig(t),
				"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
				"--dashboard-bind-address", fmt.Sprintf(bind, port)})
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()

			// The attacker: a pod elsewhere on the network, dialling the hub's address with the
			// Host header the guard trusts.
			attack := func() string {
				if outside == "" {
					return ""
				}
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/api/snapshot", net.JoinHostPort(outside, fmt.Sprint(port))), nil)
				req.Host = fmt.Sprintf("localhost:%d", port)
				resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
				if err != nil {
					return ""
				}
				defer func() { _ = resp.Body.Close() }()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					return ""
				}
				return string(body)
			}
			var err error
			g.Eventually(func(g Gomega) {
				g.Expect(attack()).NotTo(ContainSubstring(`"clusters":`), "a caller at %s read the fleet with Host: localhost", outside)
				select {
				case err = <-done:
				default:
					g.Expect("the controller").To(Equal("stopped"), "the controller still runs with the fleet view on %s", fmt.Sprintf(bind, port))
				}
			}, 25*time.Second, 200*time.Millisecond).Should(Succeed())
			g.Expect(err).To(MatchError(And(ContainSubstring("--dashboard-bind-address"), ContainSubstring("loopback"),
				ContainSubstring("kubectl port-forward"))))
		})
	}
}

// nonLoopbackAddress is an IPv4 address of this machine off the loopback: a caller dialling from
// it is not on the loopback, as a pod on the hub's network is not. Empty on a machine without one.
func nonLoopbackAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	var p int
	if _, err := fmt.Sscan(port, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
