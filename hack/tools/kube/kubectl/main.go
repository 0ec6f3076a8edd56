// Command kubectl is the upstream kubectl of the same Kubernetes release as the apiserver: the
// install test renders config/default with 'kubectl kustomize' and applies it with server-side apply.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Client auth plugins (exec, OIDC), as in the upstream kubectl.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	// Verbosity is set before the command is built so that klog works while kubectl reads its
	// plugins and .kuberc, as upstream does.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
