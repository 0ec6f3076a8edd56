package cli

import (
	"os"
	"testing"
)

// docs/cli.md is the commands' own reference: regenerate it with make docs when a command or flag
// changes.
func TestCommandReferenceIsUpToDate(t *testing.T) {
	want, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := Reference(NewRootCommand()); got != string(want) {
		t.Fatalf("docs/cli.md is out of date with the commands: run make docs and commit it")
	}
}
