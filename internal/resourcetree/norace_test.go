//go:build !race

package resourcetree

const raceDetector = false
