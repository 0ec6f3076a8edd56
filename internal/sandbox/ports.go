package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/argocd-pull/argocd-pull/internal/localproc"
)

// portsFile records the loopback port of every listener of the lab, chosen on its first start and
// kept for every later one: the hub's address is part of its identity (the OCM work agent records a
// hash of it in each AppliedManifestWork, and the managed clusters' hub kubeconfigs name it), so a
// restarted lab must come back at the same addresses.
const portsFile = "ports.json"

// portBook hands out the lab's ports by listener name ("hub-apiserver", "cluster1-etcd", ...).
type portBook struct {
	path  string
	ports map[string]int
	// within is the range new ports are taken from (PortRange; zero: up to maxPort).
	within PortRange
}

// PortRange is a range of loopback ports, both ends included. Two labs started together on one
// machine each take theirs from a range of its own: a port one has chosen is free until its
// listener starts, and the other must not choose it meanwhile.
type PortRange struct{ Low, High int }

// ParsePortRange reads "low-high" ("": the zero range, which takes any port up to maxPort).
func ParsePortRange(s string) (PortRange, error) {
	if s == "" {
		return PortRange{}, nil
	}
	low, high, ok := strings.Cut(s, "-")
	r := PortRange{}
	var err1, err2 error
	r.Low, err1 = strconv.Atoi(low)
	r.High, err2 = strconv.Atoi(high)
	if !ok || err1 != nil || err2 != nil || r.Low < 1 || r.High > maxPort || r.Low > r.High {
		return PortRange{}, fmt.Errorf("port range %q: want low-high, from 1 to %d", s, maxPort)
	}
	return r, nil
}

// holds says whether p is in r.
func (r PortRange) holds(p int) bool {
	if r == (PortRange{}) {
		return p <= maxPort
	}
	return p >= r.Low && p <= r.High
}

func loadPorts(dir string) (*portBook, error) {
	b := &portBook{path: filepath.Join(dir, portsFile), ports: map[string]int{}}
	data, err := os.ReadFile(b.path)
	if errors.Is(err, os.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &b.ports); err != nil {
		return nil, fmt.Errorf("reading %s: %w", b.path, err)
	}
	return b, nil
}

// maxPort is the highest port the lab records: the konnectivity server refuses ports of the
// dynamic range (49152 and up), and Linux hands out free ports from 32768 to 60999.
const maxPort = 49151

// port is the listener's recorded port, or a free one recorded now.
func (b *portBook) port(name string) (int, error) {
	if p, ok := b.ports[name]; ok {
		return p, nil
	}
	taken := map[int]bool{}
	for _, p := range b.ports {
		taken[p] = true
	}
	for range 200 {
		p, err := localproc.FreePort()
		if err != nil {
			return 0, err
		}
		if taken[p] || !b.within.holds(p) {
			continue
		}
		b.ports[name] = p
		data, err := json.MarshalIndent(b.ports, "", "  ")
		if err != nil {
			return 0, err
		}
		return p, os.WriteFile(b.path, data, 0o644)
	}
	return 0, fmt.Errorf("no free port for %s in %d-%d", name, b.within.Low, b.within.High)
}

// addr is "127.0.0.1:<port>" of the listener.
func (b *portBook) addr(name string) (string, error) {
	p, err := b.port(name)
	return "127.0.0.1:" + strconv.Itoa(p), err
}

// checkFree says which recorded ports another program holds now. A restarted lab does not move to
// other ports (that would change its identity); it stops and says how to start a new one.
func (b *portBook) checkFree() error {
	var taken []string
	for name, p := range b.ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			taken = append(taken, fmt.Sprintf("%d (%s)", p, name))
			continue
		}
		_ = l.Close()
	}
	if len(taken) == 0 {
		return nil
	}
	sort.Strings(taken)
	return fmt.Errorf("%w: %s", errPortsTaken, strings.Join(taken, ", "))
}

var errPortsTaken = errors.New("the lab's ports are taken by another program, and the lab keeps its addresses across restarts")

// Addr is "127.0.0.1:<port>" of one of the lab's listeners ("hub-argocd-pull-probes", ...), as
// ports.json records it.
func (l *Lab) Addr(listener string) (string, error) {
	b, err := loadPorts(l.Dir)
	if err != nil {
		return "", err
	}
	p, ok := b.ports[listener]
	if !ok {
		return "", fmt.Errorf("the lab has no listener %q", listener)
	}
	return "127.0.0.1:" + strconv.Itoa(p), nil
}

// Process is the lab's process of that name, as it runs now.
func (l *Lab) Process(name string) (Process, error) {
	procs, err := Processes(l.Dir)
	if err != nil {
		return Process{}, err
	}
	for _, p := range procs {
		if p.Name == name {
			return p, nil
		}
	}
	return Process{}, fmt.Errorf("the lab has no process %q", name)
}
