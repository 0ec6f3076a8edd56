package report

import "time"

// WriteInterval is the least time between two writes of one report of the given number of
// clusters: perCluster for each cluster, and never less than floor. A report's write costs the
// apiserver in proportion to its entries (decoding, schema validation, etcd, every watcher), so
// a fleet of large reports changing all the time is written at a bounded cost, while a small
// report follows its clusters within floor.
func WriteInterval(clusters int, floor, perCluster time.Duration) time.Duration {
	return max(floor, time.Duration(clusters)*perCluster)
}

// NextWrite says how long to wait before writing a report last written at last, at now; zero
// means write now.
func NextWrite(last, now time.Time, interval time.Duration) time.Duration {
	if last.IsZero() {
		return 0
	}
	return max(0, last.Add(interval).Sub(now))
}
