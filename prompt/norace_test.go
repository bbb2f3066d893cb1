//go:build !race

package prompt_test

// raceSlowdown scales the render time bound under the race detector.
const raceSlowdown = 1
