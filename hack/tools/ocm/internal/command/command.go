// Package command runs one OCM command as the root of its own binary, with the flags and logging
// OCM's own mains set up. (One binary per OCM command: two of them in one process panic on
// feature-gate registration.)
package command

import (
	goflag "flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	utilflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"

	"open-cluster-management.io/ocm/pkg/version"
)

// Run executes cmd under the name use. A leading upstreamVerb argument ("agent", "controller")
// is accepted and dropped, so the upstream invocation `<binary> <verb> ...` works too.
func Run(cmd *cobra.Command, use, upstreamVerb string) {
	pflag.CommandLine.SetNormalizeFunc(utilflag.WordSepNormalizeFunc)
	pflag.CommandLine.AddGoFlagSet(goflag.CommandLine)
	logs.AddFlags(pflag.CommandLine)
	logs.InitLogs()
	defer logs.FlushLogs()

	cmd.Use = use
	cmd.Version = version.Get().String()
	if cmd.Version == "" {
		cmd.Version = "<unknown>"
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == upstreamVerb {
		args = args[1:]
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		logs.FlushLogs()
		os.Exit(1)
	}
}
