package semverx_test

import (
	"fmt"

	"github.com/kindgi/agents/internal/semverx"
)

func ExampleParseRange() {
	r, err := semverx.ParseRange("^1.2.3-beta.2")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Canonical())
	for _, s := range []string{"1.2.3-beta.4", "1.2.4-beta.1", "1.9.0", "2.0.0"} {
		v, _ := semverx.ParseVersion(s)
		fmt.Println(s, r.Match(v))
	}
	// Output:
	// >=1.2.3-beta.2 <2.0.0-0
	// 1.2.3-beta.4 true
	// 1.2.4-beta.1 false
	// 1.9.0 true
	// 2.0.0 false
}

func ExampleParseVersion() {
	for _, s := range []string{"1.10.0", "v1.0.0", "1.02.0"} {
		if _, err := semverx.ParseVersion(s); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(s, "ok")
	}
	// Output:
	// 1.10.0 ok
	// "v1.0.0": write the version without the "v" prefix, as 1.0.0
	// "1.02.0": minor 02 has a leading zero; write 2
}
