package main

import "testing"

// After a run settles, memory is returned only when the heap grew by
// spareToReturn since the last return: a large one-off is given back,
// ordinary runs cost no collection.
func TestMemoryIsReturnedAfterARunOnlyWhenTheHeapGrewByALargeOneOff(t *testing.T) {
	heap, freed := uint64(10<<20), 0
	m := &memoryReturner{heap: func() uint64 { return heap }, free: func() { freed++; heap = 60 << 20 }}
	m.floor = heap
	heap += spareToReturn - 1
	m.check()
	if freed != 0 {
		t.Fatalf("returned memory after %d bytes of growth", spareToReturn-1)
	}
	heap = 10<<20 + spareToReturn
	m.check()
	if freed != 1 || m.floor != 60<<20 {
		t.Fatalf("freed %d times, floor %d: want once, then the heap after it", freed, m.floor)
	}
	heap = 60<<20 + spareToReturn/2
	m.check()
	if freed != 1 {
		t.Fatal("returned memory again without a large one-off since")
	}
}
