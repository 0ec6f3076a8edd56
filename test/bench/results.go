package main

import "github.com/argocd-pull/argocd-pull/test/bench/benchresults"

// The results file's types live in benchresults, which make docs also reads.
type (
	benchReport    = benchresults.Report
	result         = benchresults.Result
	steadyState    = benchresults.SteadyState
	cpuShare       = benchresults.CPUShare
	percentiles    = benchresults.Percentiles
	prices         = benchresults.Prices
	usage          = benchresults.Usage
	reconcileTimes = benchresults.ReconcileTimes
)

var (
	total          = benchresults.Total
	formatRequests = benchresults.FormatRequests
)
