package main

import "testing"

// go test -memprofile records the allocations of the tests it runs (the "allocs" profile).
func TestWorkers(t *testing.T) {
	runWorkers(40)
	if len(retained) == 0 {
		t.Fatal("nothing retained")
	}
}

func BenchmarkReport(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = buildReport(25)
	}
}
