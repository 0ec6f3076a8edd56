// Command kubelet is the upstream kubelet, built from the module proxy so that the lab's cluster1 runs
// real Pods (their logs and exec reach a real container) on the machine's own containerd.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
