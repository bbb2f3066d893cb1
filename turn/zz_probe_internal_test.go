package turn

import (
	"fmt"
	"reflect"
	"unsafe"
)

func nzWords(v reflect.Value) (nz, tot int) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		tot = 1
		if !v.IsNil() {
			nz = 1
		}
	case reflect.String:
		tot = 1
		if v.Len() > 0 {
			nz = 1
		}
	case reflect.Slice:
		tot = 1
		if v.Pointer() != 0 {
			nz = 1
		}
	case reflect.Interface:
		tot = 2
		if !v.IsNil() {
			nz = 2
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			a, b := nzWords(v.Index(i))
			nz += a
			tot += b
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			a, b := nzWords(v.Field(i))
			nz += a
			tot += b
		}
	}
	return
}

func PoolProbe() string {
	m := runPool.Get().(*runMem)
	defer runPool.Put(m)
	v := reflect.NewAt(reflect.TypeOf(run{}), unsafe.Pointer(&m.run)).Elem()
	out := ""
	tn, tt := 0, 0
	for i := 0; i < v.NumField(); i++ {
		nz, tot := nzWords(v.Field(i))
		tn += nz
		tt += tot
		if tot > 0 {
			out += fmt.Sprintf("  %-14s %3d/%3d\n", v.Type().Field(i).Name, nz, tot)
		}
	}
	return out + fmt.Sprintf("total %d/%d\n", tn, tt)
}
