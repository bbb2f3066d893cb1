package pgstore_test

import (
	"errors"
	"fmt"

	"github.com/kindgi/agents/pgstore"
)

func ExampleWrap() {
	raw, err := pgstore.Wrap(map[string]any{"to": "legal@globex.test"})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(raw))
	env, err := pgstore.Unwrap(raw)
	if err != nil {
		panic(err)
	}
	fmt.Println(env.V, string(env.Doc))
	// Output:
	// {"v":1,"doc":{"to":"legal@globex.test"}}
	// 1 {"to":"legal@globex.test"}
}

func ExampleUnwrap_errors() {
	for _, stored := range []string{`{"to":"x"}`, `{"v":2,"doc":{}}`} {
		_, err := pgstore.Unwrap([]byte(stored))
		var envErr pgstore.EnvelopeError
		fmt.Println(errors.As(err, &envErr), envErr.Code())
	}
	// Output:
	// true malformed-envelope
	// true unsupported-payload-version
}
