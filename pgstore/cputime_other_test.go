//go:build !unix

package pgstore

func processCPU() int64 { return 0 }

func backendCPU([]int) int64 { return 0 }
