package sandbox

import (
	"bufio"
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
// records it.
func start(dir, name, bin string, args []string, env ...string) (Process, error) {
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return Process{}, err
	}
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
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(10 * time.Second)
	}
	_ = os.RemoveAll(filepath.Join(dir, "commands"))
	if err := os.Remove(filepath.Join(dir, processesFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return procs, err
	}
	return procs, nil
}
