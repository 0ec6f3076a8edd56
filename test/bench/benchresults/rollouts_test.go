package benchresults

import "testing"

func TestMostWritesListsTheLargestCountsFirst(t *testing.T) {
	writes := map[string]float64{"applications PATCH": 4102, "manifestworks PUT": 1000, "events POST": 12, "leases PUT": 1000, "applicationsets/status PUT": 30}
	if got, want := mostWrites(writes, 3), "applications PATCH 4102, leases PUT 1000, manifestworks PUT 1000"; got != want {
		t.Errorf("mostWrites = %q, want %q", got, want)
	}
	if got, want := mostWrites(map[string]float64{"applications PATCH": 2}, 5), "applications PATCH 2"; got != want {
		t.Errorf("mostWrites = %q, want %q", got, want)
	}
}
