//go:build !unix

package pgstore

func processCPU() int64 { return 0 }
