// Package localproc runs local programs for the lab, the tests and the benchmark: binaries
// started with their output in a log file, and free loopback ports for them. It is the one place
// that starts a process or picks a port.
package localproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a binary a test runs (the controller, the OCM work agent), with its output in a log
// file.
type Process struct {
	// Log is the file its standard output and error go to.
	Log string

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	err     error
}

// Start runs bin with args, its output in logPath (created anew), env added to this process's
// environment. The process ends with the caller's: see StartDetached for one that outlives it.
func Start(logPath, bin string, args []string, env ...string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &Process{Log: logPath, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Done is closed when the process has ended, by itself or by Stop.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended; only meaningful once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop asks the process to end (SIGTERM), kills it after 15 s, and closes its log. Stopping a
// process that already ended is fine.
func (p *Process) Stop() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	_ = p.logFile.Close()
}

// Signal sends sig to the process (a test's SIGTERM, to time a graceful stop).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// StartDetached runs bin with args in a session of its own, so that it outlives the caller (the
// lab's processes run on after `sandbox up` returns), its output appended to logPath, env added to
// this process's environment. It returns the process ID.
func StartDetached(logPath, bin string, args []string, env ...string) (int, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", bin, err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid, nil
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr is a free "127.0.0.1:<port>" for a server to listen on.
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}
