// Command gendocs writes the command reference, docs/cli.md, from argocd-pull's commands
// (make docs).
package main

import (
	"fmt"
	"os"

	"github.com/argocd-pull/argocd-pull/internal/cli"
)

func main() {
	if err := os.WriteFile("docs/cli.md", []byte(cli.Reference(cli.NewRootCommand())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
