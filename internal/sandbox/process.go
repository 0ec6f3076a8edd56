package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/localproc"
)

// Process is one program the sandbox started.
type Process struct {
	Name string
	PID  int
	Log  string
}

// processesFile lists the sandbox's processes in start order, one "name pid" per line; down stops
// them in reverse, so each apiserver stops before its etcd and agents before their apiservers.
const processesFile = "processes"

// start runs bin detached from this process (its own session), output in logs/<name>.log, and
// records it. Its temporary files (the OCM agents' self-signed certificates) go to the lab's tmp
// directory unless env names another, so that they leave with the lab.
func start(dir, name, bin string, args []string, env ...string) (Process, error) {
	logDir, tmpDir := filepath.Join(dir, "logs"), filepath.Join(dir, "tmp")
	for _, d := range []string{logDir, tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Process{}, err
		}
	}
	env = append([]string{"TMPDIR=" + tmpDir}, env...) // a later TMPDIR in env wins
	logPath := filepath.Join(logDir, name+".log")
	pid, err := localproc.StartDetached(logPath, bin, args, env...)
	if err != nil {
		return Process{}, fmt.Errorf("starting %s: %w", name, err)
	}
	p := Process{Name: name, PID: pid, Log: logPath}
	if err := saveCommand(dir, name, command{Bin: bin, Args: args, Env: env}); err != nil {
		return p, err
	}
	f, err := os.OpenFile(filepath.Join(dir, processesFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return p, err
	}
	defer func() { _ = f.Close() }()
	_, err = fmt.Fprintf(f, "%s %d\n", name, p.PID)
	return p, err
}

// command is how a process was started, kept so that it can be started again.
type command struct {
	Bin  string   `json:"bin"`
	Args []string `json:"args"`
	Env  []string `json:"env,omitempty"`
}

func saveCommand(dir, name string, c command) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "commands"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "commands", name+".json"), data, 0o600)
}

// restart starts a stopped process of the sandbox again, as it was first started.
func restart(dir, name string) (Process, error) {
	data, err := os.ReadFile(filepath.Join(dir, "commands", name+".json"))
	if err != nil {
		return Process{}, fmt.Errorf("no command recorded for %s: %w", name, err)
	}
	var c command
	if err := json.Unmarshal(data, &c); err != nil {
		return Process{}, err
	}
	return start(dir, name, c.Bin, c.Args, c.Env...)
}

// Processes lists what the sandbox in dir started, in start order.
func Processes(dir string) ([]Process, error) {
	f, err := os.Open(filepath.Join(dir, processesFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []Process
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, pid, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			continue
		}
		out = append(out, Process{Name: name, PID: n, Log: filepath.Join(dir, "logs", name+".log")})
	}
	// A restarted process appears twice: keep its latest run, at its first place.
	latest := map[string]Process{}
	for _, p := range out {
		latest[p.Name] = p
	}
	var unique []Process
	for _, p := range out {
		if q, ok := latest[p.Name]; ok {
			unique = append(unique, q)
			delete(latest, p.Name)
		}
	}
	return unique, sc.Err()
}

// Running reports whether the process is alive (and not a zombie).
func (p Process) Running() bool {
	if syscall.Kill(p.PID, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

// stop sends SIGTERM, waits up to grace, then SIGKILL.
func (p Process) stop(grace time.Duration) {
	if !p.Running() {
		return
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.Running() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	for i := 0; i < 100 && p.Running(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// Down stops every process of the sandbox in dir, last started first, and forgets them.
func Down(dir string) ([]Process, error) {
	procs, err := Processes(dir)
	if err != nil {
		return nil, err
	}
	drainNodes(dir, procs)
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(10 * time.Second)
	}
	var errs []error
	for _, n := range nodesOf(dir, procs) {
		errs = append(errs, unmountUnder(n.dir))
	}
	if err := errors.Join(errs...); err != nil {
		return procs, err
	}
	_ = os.RemoveAll(filepath.Join(dir, "commands"))
	if err := os.Remove(filepath.Join(dir, processesFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return procs, err
	}
	return procs, nil
}

// componentProcesses are the processes of a component of the lab, in start order: a cluster or
// the hub (every process of it), "<cluster>-agents" (its OCM registration and work agents and its
// konnectivity agent, what a cut-off cluster loses), "argocd-pull", "applicationset-controller",
// or one process by name.
func componentProcesses(procs []Process, component string) ([]Process, error) {
	match := func(p Process) bool { return p.Name == component }
	switch {
	case component == "argocd-pull":
		match = func(p Process) bool { return p.Name == "hub-argocd-pull" }
	case component == "applicationset-controller":
		match = func(p Process) bool { return p.Name == "hub-argocd-applicationset-controller" }
	case strings.HasSuffix(component, "-agents"):
		cluster := strings.TrimSuffix(component, "-agents")
		match = func(p Process) bool {
			return p.Name == cluster+"-registration-agent" || p.Name == cluster+"-work-agent" || p.Name == cluster+"-proxy-agent" ||
				p.Name == cluster+"-cluster-proxy-agent"
		}
	case !strings.Contains(component, "-"): // a cluster, or the hub: every process of it
		match = func(p Process) bool { return strings.HasPrefix(p.Name, component+"-") }
	}
	var out []Process
	for _, p := range procs {
		if match(p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no component or process %q in the lab (components: a cluster name, <cluster>-agents, argocd-pull, applicationset-controller, or a process name from 'sandbox status')", component)
	}
	return out, nil
}

// StopComponent stops a component's processes, last started first, and returns them. They stay
// in the lab's process list: `sandbox status` shows them stopped, `sandbox down` still knows them.
func StopComponent(dir, component string) ([]Process, error) {
	procs, err := Processes(dir)
	if err != nil {
		return nil, err
	}
	stop, err := componentProcesses(procs, component)
	if err != nil {
		return nil, err
	}
	for i := len(stop) - 1; i >= 0; i-- {
		stop[i].stop(10 * time.Second)
	}
	return stop, nil
}

// StartComponent starts a component's stopped processes again, as they were first started, in
// start order; an apiserver is waited for before what talks to it starts. It returns the processes
// it started.
func StartComponent(ctx context.Context, dir, component string) ([]Process, error) {
	procs, err := Processes(dir)
	if err != nil {
		return nil, err
	}
	todo, err := componentProcesses(procs, component)
	if err != nil {
		return nil, err
	}
	var started []Process
	for _, p := range todo {
		if p.Running() {
			continue
		}
		q, err := restart(dir, p.Name)
		if err != nil {
			return started, err
		}
		started = append(started, q)
		if cluster, ok := strings.CutSuffix(p.Name, "-apiserver"); ok {
			if err := waitKubeconfigReady(ctx, filepath.Join(dir, cluster+".kubeconfig"), q.Log); err != nil {
				return started, err
			}
		}
	}
	return started, nil
}

// Purge stops the lab in dir and deletes it: data, certificates, recorded ports, logs. The next
// start is a new lab with a new identity. It refuses a directory that holds no lab.
func Purge(dir string) ([]Process, error) {
	_, ports := os.Stat(filepath.Join(dir, portsFile))
	_, procs := os.Stat(filepath.Join(dir, processesFile))
	if errors.Is(ports, os.ErrNotExist) && errors.Is(procs, os.ErrNotExist) {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s holds no lab (no %s or %s): not deleting it", dir, portsFile, processesFile)
	}
	stopped, err := Down(dir)
	if err != nil {
		return stopped, err
	}
	return stopped, os.RemoveAll(dir)
}
