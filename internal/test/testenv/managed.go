package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// The package's managed-cluster apiserver, started by the first GetManaged and stopped by Main.
var (
	managedOnce     sync.Once
	managed         *Env
	managedStartErr error
)

// GetManaged returns the package's second apiserver, standing in for a managed cluster
// (StartManagedCluster), started on first use so that packages that never ask pay nothing.
// Main stops it after the tests. Like Get, it skips the test under -short.
func GetManaged(t testing.TB) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real apiserver; run without -short")
	}
	managedOnce.Do(func() { managed, managedStartErr = StartManagedCluster() })
	if managedStartErr != nil {
		t.Fatalf("the managed-cluster apiserver did not start: %v", managedStartErr)
	}
	return managed
}

// stopManaged stops the managed-cluster apiserver if a test started it.
func stopManaged() {
	if managed == nil {
		return
	}
	if err := managed.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the managed-cluster apiserver: %v\n", err)
	}
}
