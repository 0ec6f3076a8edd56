package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Reference renders the command reference (docs/cli.md) from the commands themselves: every
// command with its description, usage and flags, so that the docs cannot drift from --help.
func Reference(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("# Command reference\n\n")
	b.WriteString("Generated from the commands by `make docs`; a test fails when this file is out of date.\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || (!c.IsAvailableCommand() && c != root) {
			return
		}
		writeCommand(&b, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.String()
}

func writeCommand(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
	text := c.Long
	if text == "" {
		text = c.Short
	}
	fmt.Fprintf(b, "%s\n", strings.TrimSpace(text))
	if c.Runnable() {
		fmt.Fprintf(b, "\n```\n%s\n```\n", c.UseLine())
	}
	if c.Example != "" {
		fmt.Fprintf(b, "\nExamples:\n\n```\n%s\n```\n", strings.TrimRight(c.Example, "\n"))
	}
	var rows []string
	c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "[]" && f.DefValue != "false" {
			def = "`" + f.DefValue + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", name, def, cell(f.Usage)))
	})
	if len(rows) > 0 {
		b.WriteString("\n| Flag | Default | Meaning |\n|---|---|---|\n")
		b.WriteString(strings.Join(rows, "\n"))
		b.WriteString("\n")
	}
}

// cell makes a flag's usage fit a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
