// Command placement runs only the OCM placement controller
// (open-cluster-management.io/ocm cmd/placement "controller" subcommand) as
// its root command: it schedules Placements into PlacementDecisions on the hub.
// A leading "controller" argument is accepted and ignored for compatibility
// with the upstream `placement controller ...` invocation.
package main

import (
	goflag "flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	utilflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"

	"open-cluster-management.io/ocm/pkg/cmd/hub"
	"open-cluster-management.io/ocm/pkg/version"
)

func main() {
	pflag.CommandLine.SetNormalizeFunc(utilflag.WordSepNormalizeFunc)
	pflag.CommandLine.AddGoFlagSet(goflag.CommandLine)

	logs.AddFlags(pflag.CommandLine)
	logs.InitLogs()
	defer logs.FlushLogs()

	cmd := hub.NewPlacementController()
	cmd.Use = "placement"
	if v := version.Get().String(); v == "" {
		cmd.Version = "<unknown>"
	} else {
		cmd.Version = v
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "controller" {
		args = args[1:]
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1) //nolint:gocritic
	}
}
