package cli

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimitShare is the part of the container's memory limit the Go runtime aims to stay under
// when GOMEMLIMIT is not set: it then collects garbage harder as the heap nears the limit instead
// of being killed by it, and keeps the rest for memory the runtime does not count (thread stacks
// outside the heap, the binary, page cache charged to the container).
const memoryLimitShare = 0.9

// cgroupMemoryFiles are where cgroup v2 and v1 give the container's memory limit.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setMemoryLimit sets the Go runtime's soft memory limit from the container's memory limit when
// GOMEMLIMIT is unset, and says what it did ("" when it did nothing).
func setMemoryLimit() string {
	if os.Getenv("GOMEMLIMIT") != "" {
		return ""
	}
	for _, path := range cgroupMemoryFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if limit, ok := softMemoryLimit(string(data)); ok {
			debug.SetMemoryLimit(limit)
			return fmt.Sprintf("%d MiB (%.0f%% of the container's limit in %s)", limit>>20, memoryLimitShare*100, path)
		}
	}
	return ""
}

// softMemoryLimit is the soft memory limit for the contents of a cgroup memory limit file, false
// when it sets no limit: "max" in cgroup v2, a huge number in cgroup v1 (no limit), or nothing
// readable.
func softMemoryLimit(content string) (int64, bool) {
	content = strings.TrimSpace(content)
	limit, err := strconv.ParseInt(content, 10, 64)
	if err != nil || limit <= 0 || limit >= 1<<60 {
		return 0, false // "max", garbage, or cgroup v1's "unlimited" (a page-rounded MaxInt64)
	}
	return int64(float64(limit) * memoryLimitShare), true
}
