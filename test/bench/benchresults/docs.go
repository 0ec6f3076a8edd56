package benchresults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The docs quote the results files through two markers, which make docs fills and make verify
// checks (a hand edit between them is undone, and shows as a diff):
//
//	<!-- bench-table n5000/results.json -->
//	(the file's table, as its results.md has it)
//	<!-- end bench-table -->
//
//	... propagation reached <!-- bench results.json results[clusters=1000].propagationToAnsweredRatio %.2f -->0.31<!-- /bench --> of the limit ...
//
// A file is named relative to the results directory (test/bench/results). In a .json file a path
// is dotted field names, where name[field=value] picks the element of a list whose field has that
// value and name[i] the i-th; a key that holds spaces is written with underscores
// (apiserverWrites.applications_PATCH for "applications PATCH") where the object has no key of
// that spelling. In a .txt file of Go benchmark output it is the benchmark's name
// (without its -GOMAXPROCS suffix), a slash, and the unit of the figure: BenchmarkBuild/ns/op,
// BenchmarkObject/Application/ns/op.
// What follows the path says how to write the figure, in order: *K or /K scales it (K a number,
// or another path of the same file: /results[clusters=1000].limit.seconds makes a ratio), then a
// fmt verb (%.2f), n (a whole number with thousands separators: 31,593) or n1 (one decimal:
// 1,829.8). Without a verb, a number is written as n.
var (
	tableMarker  = regexp.MustCompile(`(?s)(<!-- bench-table (\S+) -->\n)(.*?)(<!-- end bench-table -->)`)
	figureMarker = regexp.MustCompile(`(<!-- bench ([^>]*?) -->)(.*?)(<!-- /bench -->)`)
)

// Fill rewrites the generated parts of a markdown document from the results files in dir.
func Fill(doc, dir string) (string, error) {
	files := map[string]any{}
	load := func(name string) (any, error) {
		if v, ok := files[name]; ok {
			return v, nil
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		var v any
		switch filepath.Ext(name) {
		case ".json":
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		case ".txt":
			v = parseGoBench(data)
		default:
			return nil, fmt.Errorf("%s: a results file is .json or .txt (Go benchmark output)", name)
		}
		files[name] = v
		return v, nil
	}
	var errs []string
	doc = tableMarker.ReplaceAllStringFunc(doc, func(m string) string {
		parts := tableMarker.FindStringSubmatch(m)
		table, err := tableFile(filepath.Join(dir, parts[2]))
		if err != nil {
			errs = append(errs, err.Error())
			return m
		}
		return parts[1] + table + parts[4]
	})
	doc = figureMarker.ReplaceAllStringFunc(doc, func(m string) string {
		parts := figureMarker.FindStringSubmatch(m)
		words := strings.Fields(parts[2])
		if len(words) < 2 {
			errs = append(errs, fmt.Sprintf("%q: a figure names a results file and a path", parts[1]))
			return m
		}
		v, err := load(words[0])
		if err == nil {
			v, err = lookup(v, words[1])
		}
		var s string
		if err == nil {
			file, _ := load(words[0])
			s, err = format(v, words[2:], func(path string) (any, error) { return lookup(file, path) })
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %s: %v", words[0], words[1], err))
			return m
		}
		return parts[1] + s + parts[4]
	})
	if len(errs) > 0 {
		return doc, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return doc, nil
}

var selector = regexp.MustCompile(`^([^\[]*)(?:\[([^\]=]+)(?:=([^\]]*))?\])?$`)

// lookup follows a path through a decoded JSON file, or picks a figure of Go benchmark output.
func lookup(v any, path string) (any, error) {
	if bench, ok := v.(goBench); ok {
		// Names hold sub-benchmarks and units hold slashes (ns/op): any split that names a
		// figure of the file is the one.
		for i := range len(path) {
			if path[i] != '/' {
				continue
			}
			if figure, ok := bench[path[:i]][path[i+1:]]; ok {
				return figure, nil
			}
		}
		return nil, fmt.Errorf("no such benchmark figure (Benchmark<Name>/<unit>)")
	}
	for _, seg := range strings.Split(path, ".") {
		m := selector.FindStringSubmatch(seg)
		if m == nil {
			return nil, fmt.Errorf("bad path segment %q", seg)
		}
		if m[1] != "" {
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: not an object", m[1])
			}
			if v, ok = obj[m[1]]; !ok {
				if v, ok = obj[strings.ReplaceAll(m[1], "_", " ")]; !ok {
					return nil, fmt.Errorf("no field %q", m[1])
				}
			}
		}
		if m[2] == "" {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a list", seg)
		}
		if m[3] == "" && !strings.Contains(seg, "=") {
			i, err := strconv.Atoi(m[2])
			if err != nil || i < 0 || i >= len(list) {
				return nil, fmt.Errorf("%s: no element %s", seg, m[2])
			}
			v = list[i]
			continue
		}
		found := false
		for _, el := range list {
			if obj, ok := el.(map[string]any); ok && fmt.Sprint(obj[m[2]]) == m[3] {
				v, found = el, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: no element with %s=%s", seg, m[2], m[3])
		}
	}
	return v, nil
}

// format writes a figure: scales first, then one verb.
// format writes the figure v as spec says; other looks up a path of the same file (a scale by
// another figure).
func format(v any, spec []string, other func(path string) (any, error)) (string, error) {
	if s, ok := v.(string); ok && len(spec) == 0 {
		return s, nil
	}
	f, err := number(v)
	if err != nil {
		return "", err
	}
	verb := "n"
	for _, tok := range spec {
		switch {
		case strings.HasPrefix(tok, "*") || strings.HasPrefix(tok, "/"):
			k, err := strconv.ParseFloat(tok[1:], 64)
			if err != nil {
				var o any
				if o, err = other(tok[1:]); err == nil {
					k, err = number(o)
				}
			}
			if err != nil || k == 0 {
				return "", fmt.Errorf("bad scale %q", tok)
			}
			if tok[0] == '*' {
				f *= k
			} else {
				f /= k
			}
		case tok == "n" || tok == "n1" || strings.HasPrefix(tok, "%"):
			verb = tok
		default:
			return "", fmt.Errorf("bad format %q: *K, /K, n, n1 or a fmt verb", tok)
		}
	}
	switch verb {
	case "n":
		return Thousands(f), nil
	case "n1":
		return Thousands1(f), nil
	}
	return fmt.Sprintf(verb, f), nil
}

// number is a figure of a results file as a float.
func number(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("not a number: %v", v)
}

// goBench is Go benchmark output: per benchmark (its name without the -GOMAXPROCS suffix), each
// figure by its unit.
type goBench map[string]map[string]float64

var procsSuffix = regexp.MustCompile(`-\d+$`)

func parseGoBench(data []byte) goBench {
	out := goBench{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procsSuffix.ReplaceAllString(fields[0], "")
		figures := map[string]float64{}
		for i := 2; i+1 < len(fields); i += 2 {
			if f, err := strconv.ParseFloat(fields[i], 64); err == nil {
				figures[fields[i+1]] = f
			}
		}
		out[name] = figures
	}
	return out
}
