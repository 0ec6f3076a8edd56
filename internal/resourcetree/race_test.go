//go:build race

package resourcetree

// raceDetector: the race detector makes sync.Pool drop items on purpose, so no bound on what a
// pooled writer saves holds under it.
const raceDetector = true
