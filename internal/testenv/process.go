package testenv

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

// StartProcess runs bin with args, its output in logPath.
func StartProcess(logPath, bin string, args ...string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
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

// FreeAddr is a free "127.0.0.1:<port>" for a test's server to listen on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
