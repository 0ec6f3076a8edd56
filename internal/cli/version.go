package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and revision are set at build time (make build, make image) with -ldflags
// "-X github.com/argocd-pull/argocd-pull/internal/cli.version=... -X ...cli.revision=...": the
// release (the chart's appVersion, the image tag) and the commit.
var version, revision = "", ""

// Version returns the build's version: the one set at link time, else the module version, else
// the VCS revision Go recorded, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of argocd-pull",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev := ""
			if revision != "" {
				rev = "revision " + revision + ", "
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "argocd-pull %s (%s%s, %s/%s)\n", Version(), rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
