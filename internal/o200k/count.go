package o200k

import (
	"math"
	"unicode/utf8"
)

// Count is the number of o200k_base tokens of s. Invalid UTF-8 counts as
// it does in tiktoken-go, which splits its input as runes: each invalid
// byte becomes U+FFFD, three bytes.
func Count(s string) int {
	if s == "" {
		return 0
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	vocab := ranks()
	n := 0
	for s != "" {
		end := nextPiece(s)
		piece := s[:end]
		s = s[end:]
		if _, ok := vocab[piece]; ok {
			n++
			continue
		}
		n += mergedParts(vocab, piece)
	}
	return n
}

// mergedParts is the number of tokens byte-pair encoding merges piece
// into: from its bytes, the adjacent pair whose joined bytes have the
// lowest rank is merged first (the leftmost of equal ranks), until no pair
// joins into a token. The merges are tiktoken-go's (codec/codec.go,
// mergePairsScan and mergePairsHeap): a scan for short pieces, a heap
// from mergeHeapThreshold bytes, so a long piece costs O(n log n).
func mergedParts(vocab map[string]uint32, piece string) int {
	if len(piece) < mergeHeapThreshold {
		return mergeScan(vocab, piece)
	}
	return mergeHeap(vocab, piece)
}

// mergeHeapThreshold is tiktoken-go's: the piece length, in bytes, from
// which the heap is faster than the scan.
const mergeHeapThreshold = 96

// noRank marks a boundary that cannot merge with its successor, or that a
// merge removed.
const noRank = math.MaxUint32

// mergeScan merges the lowest-ranked pair found by a linear scan, O(n²).
func mergeScan(vocab map[string]uint32, piece string) int {
	type part struct {
		offset int
		rank   uint32
	}
	var buf [mergeHeapThreshold + 1]part
	parts := buf[:len(piece)+1]
	for i := range parts {
		parts[i] = part{i, noRank}
	}
	rankOf := func(i, skip int) uint32 {
		if i+skip+2 < len(parts) {
			if r, ok := vocab[piece[parts[i].offset:parts[i+skip+2].offset]]; ok {
				return r
			}
		}
		return noRank
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankOf(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIndex := uint32(noRank), 0
		for i, p := range parts[:len(parts)-1] {
			if p.rank < minRank {
				minRank, minIndex = p.rank, i
			}
		}
		if minRank == noRank {
			break
		}
		parts[minIndex].rank = rankOf(minIndex, 1)
		if minIndex > 0 {
			parts[minIndex-1].rank = rankOf(minIndex-1, 1)
		}
		parts = append(parts[:minIndex+1], parts[minIndex+2:]...)
	}
	return len(parts) - 1
}

// mergeNode is a part boundary in mergeHeap's doubly linked list; rank is
// that of the token made by merging the part with the next one.
type mergeNode struct {
	prev, next int32
	rank       uint32
}

type candidate struct {
	rank   uint32
	offset int32
}

// mergeHeap gives mergeScan's count in O(n log n).
func mergeHeap(vocab map[string]uint32, piece string) int {
	n := int32(len(piece))
	nodes := make([]mergeNode, n+1)
	for i := range nodes {
		nodes[i] = mergeNode{prev: int32(i) - 1, next: int32(i) + 1, rank: noRank}
	}
	nodes[n].next = -1
	rankOf := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 {
			return noRank
		}
		k := nodes[j].next
		if k < 0 {
			return noRank
		}
		if r, ok := vocab[piece[i:k]]; ok {
			return r
		}
		return noRank
	}
	h := make(candidates, 0, n)
	for i := int32(0); i+2 <= n; i++ {
		if r := rankOf(i); r != noRank {
			nodes[i].rank = r
			h = append(h, candidate{r, i})
		}
	}
	h.init()
	parts := int(n)
	for len(h) > 0 {
		top := h.pop()
		i := top.offset
		if nodes[i].rank != top.rank {
			continue // a merge since changed this boundary
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = noRank
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		parts--
		for _, b := range [2]int32{i, nodes[i].prev} {
			if b < 0 {
				continue
			}
			nodes[b].rank = rankOf(b)
			if nodes[b].rank != noRank {
				h.push(candidate{nodes[b].rank, b})
			}
		}
	}
	return parts
}

// candidates is a binary min-heap by rank, then offset, so that among
// equal ranks the leftmost pair merges first.
type candidates []candidate

func (h candidates) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].offset < h[b].offset
}

func (h candidates) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candidates) push(c candidate) {
	*h = append(*h, c)
	h.up(len(*h) - 1)
}

func (h *candidates) pop() candidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h candidates) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (h candidates) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if right := child + 1; right < len(h) && h.less(right, child) {
			child = right
		}
		if !h.less(child, i) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}
