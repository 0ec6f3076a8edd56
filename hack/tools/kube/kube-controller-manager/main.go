// Command kube-controller-manager is the upstream kube-controller-manager, for the sandbox's
// clusters: garbage collection (Argo CD deletes with foreground propagation), namespace lifecycle,
// ResourceQuota status, and the workload controllers.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
