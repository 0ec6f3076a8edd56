package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Process{}, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Process{}, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := Process{Name: name, PID: cmd.Process.Pid, Log: logPath}
	_ = cmd.Process.Release()
	f, err := os.OpenFile(filepath.Join(dir, processesFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return p, err
	}
	defer func() { _ = f.Close() }()
	_, err = fmt.Fprintf(f, "%s %d\n", name, p.PID)
	return p, err
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
	return out, sc.Err()
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
	if err := os.Remove(filepath.Join(dir, processesFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return procs, err
	}
	return procs, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
