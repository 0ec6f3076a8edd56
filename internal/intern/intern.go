// Package intern lets the objects of the controller's cache share the strings they repeat. At
// 10,000 Applications the cache holds as many Applications and ManifestWorks, decoded from JSON
// with their own copy of every key, condition reason, feedback name, JSONPath, source URL and
// status value: most of the bytes are the same few hundred strings, and most of an Application's
// maps (its source, sync policy, health, resources) are the same on every cluster its
// ApplicationSet generates for. The cache's transform (see Table.Object) replaces each with one
// shared copy, so memory follows the fleet's variety, not its size.
package intern

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Table holds one copy of each string it was given, within bounds: strings longer than MaxLen
// are not kept, and when the current generation holds MaxBytes of strings (or MaxEntries) it
// becomes the previous one and the one before is dropped. A string still in use moves back into
// the current generation when it is looked up again, so what the fleet repeats stays shared and
// what it stopped repeating (old revisions, deleted objects) leaves within two generations. What a
// managed cluster writes can therefore not grow the table beyond 2 x MaxBytes.
//
// It also holds one copy of each JSON subtree of unstructured objects (a source, a sync policy, a
// health, a resources list: the same on every cluster an ApplicationSet generates for), under the
// same bounds, in generations of their own.
type Table struct {
	MaxLen     int
	MaxBytes   int
	MaxEntries int

	mu      sync.Mutex
	strings generations // each string boxed once, so unstructured values share the box too
	trees   generations // JSON maps and arrays by their signature (see Table.tree)
	sig     []byte      // scratch for signatures, under mu
}

// generations are the two generations of one kind of shared value, by key.
type generations struct {
	cur, prev map[string]any
	curBytes  int
}

// get returns the value kept under key, moving it into the current generation, or keeps v under
// key, which must not share memory with anything that changes.
func (g *generations) get(t *Table, key string, v any) any {
	if k, ok := g.cur[key]; ok {
		return k
	}
	if k, ok := g.prev[key]; ok {
		v = k
	}
	if g.cur == nil || g.curBytes+len(key) > t.MaxBytes || len(g.cur) >= t.MaxEntries {
		g.prev, g.cur, g.curBytes = g.cur, make(map[string]any, len(g.cur)), 0
	}
	g.cur[key] = v
	g.curBytes += len(key)
	return v
}

// NewTable returns a table with the bounds the controller's cache uses: strings of up to 1 KiB
// (the OCM work agent drops raw feedback values above that), 8 MiB and 64Ki strings a generation.
func NewTable() *Table {
	return &Table{MaxLen: 1024, MaxBytes: 8 << 20, MaxEntries: 1 << 16}
}

// String returns the table's copy of s, keeping s as that copy when it has none.
func (t *Table) String(s string) string {
	if s == "" || len(s) > t.MaxLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.boxed(s).(string)
}

// boxed returns the table's copy of s as an interface value: an unstructured object holds its
// strings boxed, 16 bytes of header each, and the table shares the box with the string. The
// caller holds mu.
func (t *Table) boxed(s string) any {
	if v, ok := t.strings.cur[s]; ok { // the common case, without cloning the key
		return v
	}
	return t.strings.get(t, s, s)
}

// Len is the number of strings the table holds, in both generations.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.strings.cur) + len(t.strings.prev)
}

// Object replaces, in place, every string of obj (a typed object or an unstructured one) by the
// table's copy: metadata's labels, annotations, owner references and namespace, and everything
// in the rest of the object reachable through struct fields, pointers, slices, maps and
// interfaces. Byte slices (raw manifests) are left alone, and so are the values unique to one
// object (name, UID, resource version, timestamps): they would only churn the table. Maps are
// rebuilt with shared keys (Go keeps an entry's first key when a value is assigned under an
// equal one).
//
// The maps and arrays of an unstructured object below its top level and metadata are replaced by
// the table's copy of an equal one: objects in the cache are read, never written (the cache hands
// out deep copies, and its unsafe readers only read), so equal subtrees can be one.
func (t *Table) Object(obj any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object, _ = t.jsonMap(u.Object, nil, false)
		return
	}
	rv := reflect.ValueOf(obj)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return
	}
	t.walk(rv.Elem())
}

// uniqueMetadata are the fields of metadata that differ from one object to the next, by their
// Go field names and their JSON keys.
var uniqueMetadata = map[string]bool{
	"Name": true, "GenerateName": true, "UID": true, "ResourceVersion": true, "CreationTimestamp": true, "ManagedFields": true,
	"name": true, "generateName": true, "uid": true, "resourceVersion": true, "creationTimestamp": true, "managedFields": true,
}

// jsonMap returns m, a map of an unstructured object, rebuilt with shared keys and values; the
// values of keys in skip are kept as they are, and the map under "metadata" skips uniqueMetadata.
// When share is set and every value is the table's, m is the table's copy of an equal map, and
// shared says so.
func (t *Table) jsonMap(m map[string]any, skip map[string]bool, share bool) (out map[string]any, shared bool) {
	if m == nil {
		return nil, false
	}
	out = make(map[string]any, len(m))
	shared = share && skip == nil
	for k, v := range m {
		isShared := false
		switch meta, isMap := v.(map[string]any); {
		case skip[k]:
		case k == "metadata" && isMap:
			v, _ = t.jsonMap(meta, uniqueMetadata, false)
		default:
			v, isShared = t.jsonValue(v)
		}
		if k != "" && len(k) <= t.MaxLen {
			k = t.boxed(k).(string)
		}
		out[k] = v
		shared = shared && isShared
	}
	if !shared {
		return out, false
	}
	c, shared := t.tree(out)
	return c.(map[string]any), shared
}

// jsonValue returns v with shared strings, maps and arrays, and whether it is the table's.
func (t *Table) jsonValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if x == "" || len(x) > t.MaxLen {
			return v, x == ""
		}
		return t.boxed(x), true
	case map[string]any:
		return t.jsonMap(x, nil, true)
	case []any:
		out, shared := make([]any, len(x)), true // exact capacity: the decoder grows arrays by doubling
		for i := range x {
			var isShared bool
			out[i], isShared = t.jsonValue(x[i])
			shared = shared && isShared
		}
		if !shared {
			return out, false
		}
		return t.tree(out)
	case nil, bool, int64, float64:
		return v, true
	}
	return v, false
}

// tree returns the table's copy of v, a map or an array whose values are all the table's (or
// scalars), keeping v when it has none. Its signature names each value by identity (the table's
// strings, maps and arrays) or by bits (scalars): an address in the table's signatures stays
// valid because the value kept under it keeps what it names alive. A signature longer than
// MaxLen is not kept, so the table stays bounded as for strings.
func (t *Table) tree(v any) (any, bool) {
	sig := t.sig[:0]
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		sig = append(sig, 'm')
		for _, k := range keys {
			sig = appendString(sig, k)
			sig = appendValue(sig, x[k])
		}
	case []any:
		sig = append(sig, 'a')
		for _, e := range x {
			sig = appendValue(sig, e)
		}
	}
	t.sig = sig
	if len(sig) > t.MaxLen {
		return v, false
	}
	if c, ok := t.trees.cur[string(sig)]; ok { // no allocation for the key of a lookup
		return c, true
	}
	return t.trees.get(t, string(sig), v), true
}

// appendValue appends the signature of a value of a shared tree.
func appendValue(sig []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(sig, 'n')
	case bool:
		if x {
			return append(sig, 't')
		}
		return append(sig, 'f')
	case int64:
		return binary.LittleEndian.AppendUint64(append(sig, 'i'), uint64(x))
	case float64:
		return binary.LittleEndian.AppendUint64(append(sig, 'd'), math.Float64bits(x))
	case string:
		return appendString(append(sig, 's'), x)
	case map[string]any:
		return binary.LittleEndian.AppendUint64(append(sig, 'M'), uint64(uintptr(reflect.ValueOf(x).UnsafePointer())))
	case []any:
		sig = binary.LittleEndian.AppendUint64(append(sig, 'A'), uint64(uintptr(unsafe.Pointer(unsafe.SliceData(x)))))
		return binary.LittleEndian.AppendUint64(sig, uint64(len(x)))
	}
	panic(fmt.Sprintf("intern: %T in a shared tree", v)) // jsonValue shares no other type
}

// appendString appends a table's string by its address and length.
func appendString(sig []byte, s string) []byte {
	sig = binary.LittleEndian.AppendUint64(sig, uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))))
	return binary.LittleEndian.AppendUint64(sig, uint64(len(s)))
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// walk shares the strings of a typed value, which must be settable.
func (t *Table) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); s != "" && len(s) <= t.MaxLen {
			v.SetString(t.boxed(s).(string))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			t.walk(v.Elem())
		}
	case reflect.Struct:
		typ := v.Type()
		for i := range v.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || typ == objectMetaType && uniqueMetadata[f.Name] {
				continue
			}
			t.walk(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // raw JSON: unique to each object
		}
		if v.Kind() == reflect.Slice && v.Cap() > v.Len() { // the decoder grows slices by doubling
			exact := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(exact, v)
			v.Set(exact)
		}
		for i := range v.Len() {
			t.walk(v.Index(i))
		}
	case reflect.Map:
		if !v.IsNil() && v.Len() > 0 {
			v.Set(t.typedMap(v))
		}
	case reflect.Interface:
		if !v.IsNil() {
			x, _ := t.jsonValue(v.Elem().Interface())
			v.Set(reflect.ValueOf(x))
		}
	}
}

// typedMap returns a copy of the typed map m with shared keys and values.
func (t *Table) typedMap(m reflect.Value) reflect.Value {
	typ := m.Type()
	out := reflect.MakeMapWithSize(typ, m.Len())
	for iter := m.MapRange(); iter.Next(); {
		k, v := reflect.New(typ.Key()).Elem(), reflect.New(typ.Elem()).Elem() // settable copies
		k.Set(iter.Key())
		v.Set(iter.Value())
		t.walk(k)
		t.walk(v)
		out.SetMapIndex(k, v)
	}
	return out
}

// CacheTransform is the transform of every object a cache of the fleet keeps (the controller's,
// the dashboard's). managedFields are often the largest part of an object and nothing here reads
// them; the strings and subtrees the fleet repeats are shared through the table: about 35% less
// per Application and work, and 246 -> 147 MB live at 10,000 Applications (docs/benchmarks.md).
func (t *Table) CacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return out, err
		}
		t.Object(out)
		return out, nil
	}
}
