// Command kube-scheduler is the upstream kube-scheduler, built from the module proxy: it places the
// Pods of the lab's managed clusters on their nodes (internal/sandbox/node.go).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
