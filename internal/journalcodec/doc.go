// Package journalcodec writes and reads the JSON of a run's journal: the
// step outputs, messages and snapshot input a turn stores, byte for byte
// and value for value as encoding/json writes and reads them, without
// reflection on the hot path.
//
// encoding/json is the reference. For each Go type the codec meets it
// compiles, once, a descriptor from the type's reflection: its kind, and
// for a struct its exported fields with their JSON names and options, in
// declaration order (see compile). Append walks a value by its
// descriptor; a value it cannot vouch for byte for byte — a string with a
// byte outside printable ASCII, \n, \r and \t, a number json.Marshal would
// write with an exponent, raw JSON it would compact or reject, a time not
// in UTC, a non-empty map, a type with its own MarshalJSON — makes it
// report false, and Marshal then calls json.Marshal. Decode likewise reads
// only the forms it knows and declines anything else (an unknown or
// repeated key, an escape it does not handle, a null where encoding/json
// would leave the value as it is), and Unmarshal then calls
// json.Unmarshal. A field added to a type is in its descriptor by
// construction: nothing can drop it. FuzzCodecMatchesEncodingJSON and
// TestCodecRoundTripsEveryField hold the codec to encoding/json.
//
// # Unsafe
//
// The codec reads and writes a value's fields through unsafe.Pointer and
// the offsets of its descriptor (field.off, and the element size of a
// slice). The invariant: a descriptor is only ever applied to a pointer
// to a value of the very type it was compiled from — Append[T] and
// Decode[T] look the descriptor up by reflect.TypeFor[T], and each
// descriptor hands its fields' pointers only to the descriptors of the
// fields' types. Memory the decoder allocates is allocated through
// reflect with its real type, so the garbage collector knows its
// pointers. TestDescriptorOffsetsMatchReflect checks every offset and
// kind against reflect, and the differential tests would catch a value
// read or written at a wrong place.
//
// A descriptor is found by its type's identity, typeID: the data word of
// the reflect.Type interface, which is reflect's *rtype, the runtime's
// descriptor of the type. TestTypeIDIsTheTypePointer holds it to
// reflect.ValueOf(t).UnsafePointer().
//
// Decode with shared set returns strings that share the document's bytes
// (sharedString): the caller vouches that no one writes those bytes again
// for as long as the process runs. TestSharedDecodeSharesBytes holds that
// the strings do share them, and that without shared they do not.
package journalcodec
