// Command kube-apiserver is the upstream kube-apiserver, built from the module proxy so that tests
// and the sandbox run against a real apiserver without downloading release binaries.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
