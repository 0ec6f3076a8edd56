// Command work-agent runs only the OCM spoke work agent
// (open-cluster-management.io/ocm cmd/work "agent" subcommand) as its root
// command, so `work-agent --spoke-cluster-name=... --hub-kubeconfig=...` works.
// A leading "agent" argument is accepted and ignored for compatibility with
// the upstream `work agent ...` invocation.
package main

import (
	goflag "flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	utilflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"

	"open-cluster-management.io/ocm/pkg/cmd/spoke"
	"open-cluster-management.io/ocm/pkg/version"
)

func main() {
	pflag.CommandLine.SetNormalizeFunc(utilflag.WordSepNormalizeFunc)
	pflag.CommandLine.AddGoFlagSet(goflag.CommandLine)

	logs.AddFlags(pflag.CommandLine)
	logs.InitLogs()
	defer logs.FlushLogs()

	cmd := spoke.NewWorkAgent()
	cmd.Use = "work-agent"
	if v := version.Get().String(); v == "" {
		cmd.Version = "<unknown>"
	} else {
		cmd.Version = v
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "agent" {
		args = args[1:]
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1) //nolint:gocritic
	}
}
