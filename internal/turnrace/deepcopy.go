package turnrace

import (
	"reflect"
	"strings"
)

// DeepCopy returns a copy of v that shares no memory with it that a later
// write could reach: strings and byte slices are copied too (a string that
// aliases a reused buffer changes with it), as are slices, maps, pointers
// and interfaces, recursively. A struct's unexported fields are copied as
// they are (time.Time's location is immutable).
func DeepCopy[T any](v T) T {
	var out T
	reflect.ValueOf(&out).Elem().Set(deepCopy(reflect.ValueOf(&v).Elem()))
	return out
}

func deepCopy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.String:
		out.SetString(strings.Clone(v.String()))
	case reflect.Slice:
		if v.IsNil() {
			return out
		}
		out.Set(reflect.MakeSlice(v.Type(), v.Len(), v.Len()))
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
	case reflect.Array:
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
	case reflect.Map:
		if v.IsNil() {
			return out
		}
		out.Set(reflect.MakeMapWithSize(v.Type(), v.Len()))
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(deepCopy(it.Key()), deepCopy(it.Value()))
		}
	case reflect.Pointer:
		if v.IsNil() {
			return out
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		out.Set(p)
	case reflect.Interface:
		if v.IsNil() {
			return out
		}
		out.Set(deepCopy(v.Elem()))
	case reflect.Struct:
		out.Set(v)
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
	default:
		out.Set(v)
	}
	return out
}
