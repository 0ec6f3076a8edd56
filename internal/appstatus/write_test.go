package appstatus

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomJSON is a JSON-like value of depth at most depth, its numbers of random Go types.
func randomJSON(r *rand.Rand, depth int) any {
	kind := r.IntN(9)
	if depth == 0 {
		kind = r.IntN(7)
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return fmt.Sprint(r.IntN(3))
	case 3:
		return int64(r.IntN(3))
	case 4:
		return r.IntN(3)
	case 5:
		return float64(r.IntN(6)) / 2
	case 6:
		return []string{fmt.Sprint(r.IntN(2))} // a typed value: compared by its encoding
	case 7:
		n := r.IntN(3)
		if n == 0 && r.IntN(2) == 0 {
			return []any(nil)
		}
		list := make([]any, n)
		for i := range list {
			list[i] = randomJSON(r, depth-1)
		}
		return list
	default:
		n := r.IntN(3)
		if n == 0 && r.IntN(2) == 0 {
			return map[string]any(nil)
		}
		m := make(map[string]any, n)
		for range n {
			m[fmt.Sprint(r.IntN(3))] = randomJSON(r, depth-1)
		}
		return m
	}
}

// jsonEqual agrees with comparing the two values' encodings, over random values of every JSON
// kind, numbers of mixed Go types, typed values, and nil maps and lists beside empty ones.
func TestJSONEqualAgreesWithTheEncodings(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	equal := 0
	for i := range 200000 {
		a, b := randomJSON(r, 3), randomJSON(r, 3)
		if i%2 == 0 {
			b = a // and the same value against itself
		}
		want := encodedEqual(a, b)
		if got := jsonEqual(a, b); got != want {
			t.Fatalf("jsonEqual(%#v, %#v) = %v, the encodings say %v", a, b, got, want)
		}
		if want {
			equal++
		}
	}
	if equal < 100000 {
		t.Errorf("only %d of the pairs were equal: the test compares too few equal values", equal)
	}
}
