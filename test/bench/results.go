package main

import (
	"fmt"
	"strings"
)

// markdown renders the results as one table, a column per size.
func (r benchReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Command: `%s`, %.0fs in all.\n\n", r.Machine, r.Command, r.Seconds)
	b.WriteString("| |")
	for _, res := range r.Results {
		fmt.Fprintf(&b, " N=%d, A=%d (%d apps) |", res.Clusters, res.ApplicationSets, res.Applications)
	}
	b.WriteString("\n|---|")
	for range r.Results {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	row := func(name string, cell func(result) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, res := range r.Results {
			fmt.Fprintf(&b, " %s |", cell(res))
		}
		b.WriteString("\n")
	}
	row("apiserver CPU per ManifestWork create / Application status patch", func(x result) string {
		return fmt.Sprintf("%.1f / %.1f ms", x.Prices.WorkCreateMs, x.Prices.AppStatusPatchMs)
	})
	row("apiserver CPU per report entry written", func(x result) string {
		return fmt.Sprintf("%.3f ms (%.0f ms per write of 1,000 clusters)", x.Prices.ReportEntryMs, x.Prices.ReportEntryMs*1000)
	})
	row("propagation: all works exist after", func(x result) string {
		return fmt.Sprintf("%.1fs (first after %.1fs)", x.PropagationSeconds, x.FirstWorkSeconds)
	})
	row("propagation rate", func(x result) string { return fmt.Sprintf("%.0f works/s", x.PropagationPerSecond) })
	row("direct create, same concurrency and limits", func(x result) string { return fmt.Sprintf("%.0f works/s", x.DirectPerSecond) })
	row("direct create, no client limit", func(x result) string { return fmt.Sprintf("%.0f works/s", x.DirectUnthrottledPerSecond) })
	row("**propagation / direct**", func(x result) string { return fmt.Sprintf("**%.2f**", x.PropagationRatio) })
	row("direct create while the agents answer", func(x result) string { return fmt.Sprintf("%.0f works/s", x.DirectAnsweredPerSecond) })
	row("**propagation / direct while the agents answer**", func(x result) string { return fmt.Sprintf("**%.2f**", x.PropagationToAnswered) })
	row("CPU while created directly as the agents answer", func(x result) string { return x.DirectAnsweredCPU.String() })
	row("every report complete after", func(x result) string { return fmt.Sprintf("%.1fs", x.InitialReportSeconds) })
	row("controller requests per Application until then", func(x result) string { return fmt.Sprintf("%.2f", x.RequestsPerApplication) })
	row("CPU from the controller's start until then", func(x result) string { return x.PropagationCPU.String() })
	row("feedback -> hub Application p50/p90/p99", func(x result) string { return latencyCell(x.AppStatusLatency) })
	row("feedback -> report p50/p90/p99", func(x result) string { return latencyCell(x.ReportLatency) })
	row("changes (rate achieved)", func(x result) string {
		return fmt.Sprintf("%d (%.0f/s)", x.ReportLatency.Count, x.ChangesPerSecond)
	})
	row("controller writes per change", func(x result) string { return fmt.Sprintf("%.2f", x.WritesPerChange) })
	row("controller peak RSS", func(x result) string { return fmt.Sprintf("%.0f MiB", x.Controller.PeakRSSMiB) })
	row("controller CPU", func(x result) string { return fmt.Sprintf("%.1f s", x.Controller.CPUSeconds) })
	row("controller API requests", func(x result) string {
		return fmt.Sprintf("%.0f (%s)", total(x.Requests), formatRequests(x.Requests))
	})
	row("restart: converged after", func(x result) string { return fmt.Sprintf("%.1fs", x.RestartSeconds) })
	row("restart: writes", func(x result) string { return fmt.Sprintf("%.0f", x.RestartWrites) })
	row("largest report", func(x result) string { return fmt.Sprintf("%.0f KiB", float64(x.ReportBytes)/1024) })
	row("hub Application size p50 / largest", func(x result) string {
		return fmt.Sprintf("%.1f / %.1f KiB", float64(x.AppBytesP50)/1024, float64(x.AppBytesMax)/1024)
	})
	steady := func(name string, cell func(*steadyState) string) {
		row(name, func(x result) string {
			if x.Steady == nil {
				return "-"
			}
			return cell(x.Steady)
		})
	}
	steady("steady state: length, Argo CD resync, changes", func(s *steadyState) string {
		return fmt.Sprintf("%.0fs, %.0fs, %.0f/s", s.Seconds, s.ResyncSeconds, s.ChangesPerSecond)
	})
	steady("steady state: agent / controller writes", func(s *steadyState) string {
		return fmt.Sprintf("%.1f / %.1f per s", s.AgentWritesPerSec, s.ControllerWrites)
	})
	steady("steady state: controller CPU", func(s *steadyState) string { return fmt.Sprintf("%.1f s/min", s.ControllerCPU) })
	steady("steady state: CPU", func(s *steadyState) string { return s.CPU.String() })
	steady("steady state: feedback -> hub Application", func(s *steadyState) string { return latencyCell(s.AppStatusLatency) })
	steady("steady state: feedback -> report", func(s *steadyState) string { return latencyCell(s.ReportLatency) })
	if len(r.Results) > 0 {
		fmt.Fprintf(&b, "\nController flags: `%s`.\n", strings.Join(r.Results[0].ControllerFlags, " "))
	}
	for _, x := range r.Results {
		if len(x.ReportNotes) > 0 {
			fmt.Fprintf(&b, "\nThe largest report's notes at N=%d:\n", x.Clusters)
			for _, n := range x.ReportNotes {
				fmt.Fprintf(&b, "- %s\n", n)
			}
		}
	}
	return b.String()
}

func latencyCell(p percentiles) string {
	return fmt.Sprintf("%.0f / %.0f / %.0f ms", p.P50ms, p.P90ms, p.P99ms)
}
