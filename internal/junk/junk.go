// Package junk fills values with junk for tests that check a reset: a
// field a reset leaves out is not zero afterwards.
package junk

import (
	"reflect"
	"testing"

	"github.com/kindgi/agents/internal/alias"
)

// Fill sets every field of v (addressable), exported or not, to a
// value that is not zero: strings, numbers, pointers, slices, maps,
// functions, and interfaces for which one of ifaces fits.
func Fill(t testing.TB, v reflect.Value, ifaces []any) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("junk")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Chan:
		v.Set(reflect.MakeChan(v.Type(), 0))
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func(args []reflect.Value) []reflect.Value {
			out := make([]reflect.Value, v.Type().NumOut())
			for i := range out {
				out[i] = reflect.Zero(v.Type().Out(i))
			}
			return out
		}))
	case reflect.Interface:
		for _, c := range ifaces {
			if reflect.TypeOf(c).Implements(v.Type()) {
				v.Set(reflect.ValueOf(c))
				return
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			Fill(t, v.Index(i), ifaces)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			Fill(t, alias.Settable(f), ifaces)
		}
	}
}
