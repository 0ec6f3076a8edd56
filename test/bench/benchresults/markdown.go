package benchresults

import (
	"fmt"
	"slices"
	"strings"
)

// Markdown renders the report as one table, a column per size, under a line that says where the
// figures come from.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Command: `%s`, %s s in all.", r.MachineLine(), r.Command, Thousands(r.Seconds))
	if r.ControllerVersion != "" {
		fmt.Fprintf(&b, " Controller: `%s`.", r.ControllerVersion)
	}
	b.WriteString("\n\n| |")
	for _, res := range r.Results {
		fmt.Fprintf(&b, " N=%s, A=%d (%s apps) |", Thousands(float64(res.Clusters)), res.ApplicationSets, Thousands(float64(res.Applications)))
	}
	b.WriteString("\n|---|")
	for range r.Results {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	row := func(name string, cell func(Result) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, res := range r.Results {
			fmt.Fprintf(&b, " %s |", cell(res))
		}
		b.WriteString("\n")
	}
	row("simulated agents: watches of the works / lease renewed every", func(x Result) string {
		watches := "one shared by all clusters"
		if x.WatchesPerCluster > 0 {
			watches = fmt.Sprintf("%d per cluster, on its namespace", x.WatchesPerCluster)
		}
		lease := "no leases"
		if x.LeaseDurationSeconds > 0 {
			lease = fmt.Sprintf("%.0f s", x.LeaseDurationSeconds)
		}
		return watches + " / " + lease
	})
	row("apiserver CPU per ManifestWork create / Application status patch", func(x Result) string {
		return fmt.Sprintf("%.1f / %.1f ms", x.Prices.WorkCreateMs, x.Prices.AppStatusPatchMs)
	})
	row("apiserver CPU per Application delivered, one write at a time: with the claim / a held work created directly", func(x Result) string {
		if x.Prices.DeliveryMs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f ms", x.Prices.DeliveryMs, x.Prices.UnclaimedDeliveryMs)
	})
	row("apiserver CPU per Application delivered through its cluster's claim probe, one write at a time", func(x Result) string {
		if x.Prices.ProbedDeliveryMs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f ms (the probe's create, answer and delete: %.1f, %.1f, %.1f ms, shared by %d)",
			x.Prices.ProbedDeliveryMs, x.Prices.ProbeWriteMs, x.Prices.ProbeAnswerMs, x.Prices.ProbeDeleteMs, x.Prices.ProbeEntries)
	})
	row("apiserver CPU per report entry written", func(x Result) string {
		return fmt.Sprintf("%.3f ms (%.0f ms per write of 1,000 clusters)", x.Prices.ReportEntryMs, x.Prices.ReportEntryMs*1000)
	})
	row("propagation: all works exist after", func(x Result) string {
		return fmt.Sprintf("%s s (first after %.1f s)", Thousands1(x.PropagationSeconds), x.FirstWorkSeconds)
	})
	row("propagation rate", func(x Result) string { return fmt.Sprintf("%.0f works/s", x.PropagationPerSecond) })
	row("direct create, same concurrency and limits", func(x Result) string { return fmt.Sprintf("%.0f works/s", x.DirectPerSecond) })
	row("direct create, no client limit", func(x Result) string { return fmt.Sprintf("%.0f works/s", x.DirectUnthrottledPerSecond) })
	row("**propagation / direct**", func(x Result) string { return fmt.Sprintf("**%.2f**", x.PropagationRatio) })
	row("direct create while the agents answer", func(x Result) string { return fmt.Sprintf("%.0f works/s", x.DirectAnsweredPerSecond) })
	row("**propagation / direct while the agents answer**", func(x Result) string { return fmt.Sprintf("**%.2f**", x.PropagationToAnswered) })
	if slices.ContainsFunc(r.Results, func(x Result) bool { return x.PropagationToLastAnswerSeconds > 0 }) {
		// Files made before both sides were timed to their last answer have no such row.
		row("both to their last answer: propagation / direct create", func(x Result) string {
			if x.PropagationToLastAnswerSeconds == 0 {
				return "-"
			}
			return fmt.Sprintf("%s s / %.0f works/s: **%.2f**", Thousands1(x.PropagationToLastAnswerSeconds), x.DirectToLastAnswerPerSecond, x.PropagationToLastAnswerRatio)
		})
	}
	row("CPU while created directly as the agents answer", func(x Result) string { return x.DirectAnsweredCPU.String() })
	row("every report complete (every Application delivered) after", func(x Result) string {
		return Thousands1(x.InitialReportSeconds) + " s"
	})
	row("first delivery per Application, from the controller's start, p50 / p90 / p99", func(x Result) string { return latencyCell(x.FirstDelivery) })
	row("controller requests per Application until then", func(x Result) string { return fmt.Sprintf("%.2f", x.RequestsPerApplication) })
	row("CPU from the controller's start until then", func(x Result) string { return x.PropagationCPU.String() })
	row("feedback -> hub Application p50 / p90 / p99", func(x Result) string { return latencyCell(x.AppStatusLatency) })
	row("feedback -> report p50 / p90 / p99", func(x Result) string { return latencyCell(x.ReportLatency) })
	row("changes (rate achieved)", func(x Result) string {
		return fmt.Sprintf("%s (%.0f/s)", Thousands(float64(x.ReportLatency.Count)), x.ChangesPerSecond)
	})
	row("controller writes per change", func(x Result) string { return fmt.Sprintf("%.2f", x.WritesPerChange) })
	row("resource-tree writes: first deliveries / per change", func(x Result) string {
		if x.TreeWritesAtStart == nil || x.TreeWritesPerChange == nil {
			return "-"
		}
		return fmt.Sprintf("%s / %.2f", Thousands(*x.TreeWritesAtStart), *x.TreeWritesPerChange)
	})
	row("controller peak RSS", func(x Result) string { return Thousands(x.Controller.PeakRSSMiB) + " MiB" })
	row("controller CPU", func(x Result) string { return Thousands1(x.Controller.CPUSeconds) + " s" })
	row("controller API requests", func(x Result) string {
		return fmt.Sprintf("%s (%s)", Thousands(Total(x.Requests)), FormatRequests(x.Requests))
	})
	row("restart: converged after", func(x Result) string { return Thousands1(x.RestartSeconds) + " s" })
	row("restart: writes", func(x Result) string { return Thousands(x.RestartWrites) })
	row("largest report", func(x Result) string { return Thousands(float64(x.ReportBytes)/1024) + " KiB" })
	row("hub Application size p50 / largest", func(x Result) string {
		if x.AppBytesMax == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f KiB", float64(x.AppBytesP50)/1024, float64(x.AppBytesMax)/1024)
	})
	steady := func(name string, cell func(*SteadyState) string) {
		row(name, func(x Result) string {
			if x.Steady == nil {
				return "-"
			}
			return cell(x.Steady)
		})
	}
	steady("steady state: length, Argo CD resync, changes", func(s *SteadyState) string {
		return fmt.Sprintf("%.0f s, %.0f s, %.0f/s", s.Seconds, s.ResyncSeconds, s.ChangesPerSecond)
	})
	steady("steady state: agent / lease / controller writes", func(s *SteadyState) string {
		return fmt.Sprintf("%.1f / %.1f / %.1f per s", s.AgentWritesPerSec, s.LeaseWritesPerSec, s.ControllerWrites)
	})
	steady("steady state: resource-tree writes", func(s *SteadyState) string {
		if s.TreeWritesPerSec == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f per s", *s.TreeWritesPerSec)
	})
	steady("steady state: controller CPU", func(s *SteadyState) string { return fmt.Sprintf("%.1f s/min", s.ControllerCPU) })
	steady("steady state: CPU", func(s *SteadyState) string { return s.CPU.String() })
	steady("steady state: feedback -> hub Application", func(s *SteadyState) string { return latencyCell(s.AppStatusLatency) })
	steady("steady state: feedback -> report", func(s *SteadyState) string { return latencyCell(s.ReportLatency) })
	if len(r.Results) > 0 {
		fmt.Fprintf(&b, "\nController flags: `%s`.\n", strings.Join(r.Results[0].ControllerFlags, " "))
		if env := r.Results[0].ControllerEnv; len(env) > 0 {
			fmt.Fprintf(&b, "Controller environment: `%s`.\n", strings.Join(env, " "))
		}
	}
	for _, x := range r.Results {
		if len(x.ReportNotes) > 0 {
			fmt.Fprintf(&b, "\nThe largest report's notes at N=%s:\n", Thousands(float64(x.Clusters)))
			for _, n := range x.ReportNotes {
				fmt.Fprintf(&b, "- %s\n", n)
			}
		}
	}
	return b.String()
}

func latencyCell(p Percentiles) string {
	if p.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s / %s ms", Thousands(p.P50ms), Thousands(p.P90ms), Thousands(p.P99ms))
}

// Thousands writes v rounded to a whole number, with a comma between thousands: 31593 -> 31,593.
func Thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// Thousands1 writes v with one decimal, with a comma between thousands: 1829.84 -> 1,829.8.
func Thousands1(v float64) string {
	whole := float64(int64(v))
	frac := fmt.Sprintf("%.1f", v-whole)
	if frac == "1.0" { // rounding carried into the whole part
		return Thousands(whole+1) + ".0"
	}
	return Thousands(whole) + strings.TrimPrefix(frac, "0")
}
