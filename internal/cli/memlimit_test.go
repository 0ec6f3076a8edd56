package cli

import "testing"

func TestSoftMemoryLimitFromTheCgroup(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    int64
		ok      bool
	}{
		{"1073741824\n", 966367641, true},   // 1Gi: the chart's default limit
		{"max\n", 0, false},                 // cgroup v2 without a limit
		{"9223372036854771712\n", 0, false}, // cgroup v1 without a limit
		{"", 0, false},
		{"0\n", 0, false},
		{"-1", 0, false},
		{"lots", 0, false},
	} {
		got, ok := softMemoryLimit(tc.content)
		if got != tc.want || ok != tc.ok {
			t.Errorf("softMemoryLimit(%q) = %d, %v; want %d, %v", tc.content, got, ok, tc.want, tc.ok)
		}
	}
}
