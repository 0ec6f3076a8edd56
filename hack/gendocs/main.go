// Command gendocs writes what the docs generate (make docs): the command reference docs/cli.md
// from argocd-pull's commands, each benchmark results.md from its results.json, and the
// benchmark tables and figures the docs and the README quote (test/bench/benchresults, Fill).
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/argocd-pull/argocd-pull/internal/cli"
	"github.com/argocd-pull/argocd-pull/test/bench/benchresults"
)

// resultsDir holds the benchmark results files the docs quote.
const resultsDir = "test/bench/results"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run() error {
	if err := writeIfChanged("docs/cli.md", cli.Reference(cli.NewRootCommand())); err != nil {
		return err
	}
	err := filepath.WalkDir(resultsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "results.json" {
			return err
		}
		md, err := benchresults.RenderFile(path)
		if err != nil {
			return err
		}
		return writeIfChanged(filepath.Join(filepath.Dir(path), "results.md"), md)
	})
	if err != nil {
		return err
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		return err
	}
	for _, path := range append(docs, "README.md") {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		filled, err := benchresults.Fill(string(data), resultsDir)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := writeIfChanged(path, filled); err != nil {
			return err
		}
	}
	return nil
}

func writeIfChanged(path, content string) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == content {
		return nil
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
