// Package intern lets the objects of the controller's cache share the strings they repeat. At
// 10,000 Applications the cache holds as many Applications and ManifestWorks, decoded from JSON
// with their own copy of every key, condition reason, feedback name, JSONPath, source URL and
// status value: most of the bytes are the same few hundred strings. The cache's transform (see
// Table.Object) replaces each with one shared copy, so memory follows the fleet's variety, not its size.
package intern

import (
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Table holds one copy of each string it was given, within bounds: strings longer than MaxLen
// are not kept, and when the current generation holds MaxBytes of strings (or MaxEntries) it
// becomes the previous one and the one before is dropped. A string still in use moves back into
// the current generation when it is looked up again, so what the fleet repeats stays shared and
// what it stopped repeating (old revisions, deleted objects) leaves within two generations. What a
// managed cluster writes can therefore not grow the table beyond 2 x MaxBytes.
type Table struct {
	MaxLen     int
	MaxBytes   int
	MaxEntries int

	mu        sync.Mutex
	cur, prev map[string]any // each string boxed once, so unstructured values share the box too
	curBytes  int
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
	return t.boxed(s).(string)
}

// boxed returns the table's copy of s as an interface value: an unstructured object holds its
// strings boxed, 16 bytes of header each, and the table shares the box with the string.
func (t *Table) boxed(s string) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.cur[s]; ok {
		return v
	}
	v, ok := t.prev[s]
	if !ok {
		v = s
	}
	if t.cur == nil || t.curBytes+len(s) > t.MaxBytes || len(t.cur) >= t.MaxEntries {
		t.prev, t.cur, t.curBytes = t.cur, make(map[string]any, len(t.cur)), 0
	}
	t.cur[v.(string)] = v
	t.curBytes += len(s)
	return v
}

// Len is the number of strings the table holds, in both generations.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cur) + len(t.prev)
}

// Object replaces, in place, every string of obj (a typed object or an unstructured one) by the
// table's copy: metadata's labels, annotations, owner references and namespace, and everything
// in the rest of the object reachable through struct fields, pointers, slices, maps and
// interfaces. Byte slices (raw manifests) are left alone, and so are the values unique to one
// object (name, UID, resource version, timestamps): they would only churn the table. Maps are
// rebuilt with shared keys (Go keeps an entry's first key when a value is assigned under an
// equal one).
func (t *Table) Object(obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = t.jsonMap(u.Object, nil)
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
func (t *Table) jsonMap(m map[string]any, skip map[string]bool) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch meta, isMap := v.(map[string]any); {
		case skip[k]:
		case k == "metadata" && isMap:
			v = t.jsonMap(meta, uniqueMetadata)
		default:
			v = t.jsonValue(v)
		}
		out[t.String(k)] = v
	}
	return out
}

func (t *Table) jsonValue(v any) any {
	switch x := v.(type) {
	case string:
		if x == "" || len(x) > t.MaxLen {
			return v
		}
		return t.boxed(x)
	case map[string]any:
		return t.jsonMap(x, nil)
	case []any:
		if cap(x) > len(x) { // the decoder grows arrays by doubling
			x = append(make([]any, 0, len(x)), x...)
		}
		for i := range x {
			x[i] = t.jsonValue(x[i])
		}
		return x
	}
	return v
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// walk shares the strings of a typed value, which must be settable.
func (t *Table) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(t.String(v.String()))
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
			v.Set(reflect.ValueOf(t.jsonValue(v.Elem().Interface())))
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
