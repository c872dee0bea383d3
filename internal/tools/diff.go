package tools

import (
	"fmt"
	"strings"
)

// Line-based unified diffs for display (edit and write Details). They follow
// diff -u closely enough for editors and patch, but exactness on huge
// rewrites is traded for bounded work: past maxDiffEdits differing lines the
// changed middle is shown as one replaced block.

const (
	maxChangedLines = 1000 // line numbers listed in Details
	diffContext     = 3
	maxDiffEdits    = 1000
)

type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

// diffOp is one line of the edit script; a and b are 0-based line indexes
// into the old and new text (the one that does not apply is the position).
type diffOp struct {
	kind opKind
	a, b int
}

// splitLines splits s into lines that keep their "\n"; the last line lacks
// it when s does not end with a newline.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []diffOp {
	// Trim the common head and tail, which is all most edits leave to diff.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b))
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{opEqual, i, i})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre)...)
	for i := 0; i < suf; i++ {
		ai, bi := len(a)-suf+i, len(b)-suf+i
		ops = append(ops, diffOp{opEqual, ai, bi})
	}
	return ops
}

// myers is Myers' O(ND) diff of a and b, whose lines start at index off of
// the full texts. It gives up past maxDiffEdits and replaces the whole block.
func myers(a, b []string, off int) []diffOp {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceBlock(n, m, off)
	}
	// Lines as ints make the inner loop cheap.
	ids := map[string]int{}
	intern := func(ls []string) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	ai, bi := intern(a), intern(b)
	maxD := n + m
	if maxD > maxDiffEdits {
		maxD = maxDiffEdits
	}
	v := make([]int, 2*maxD+3)
	center := maxD + 1
	var trace [][]int // trace[d] holds v[-d-1..d+1] as it was before round d
	for d := 0; d <= maxD; d++ {
		snap := make([]int, 2*d+3)
		copy(snap, v[center-d-1:center+d+2])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[center+k-1] < v[center+k+1]) {
				x = v[center+k+1]
			} else {
				x = v[center+k-1] + 1
			}
			y := x - k
			for x < n && y < m && ai[x] == bi[y] {
				x++
				y++
			}
			v[center+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m, off)
			}
		}
	}
	return replaceBlock(n, m, off)
}

func backtrack(trace [][]int, n, m, off int) []diffOp {
	var rev []diffOp
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		at := func(k int) int { return v[k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, diffOp{opEqual, off + x, off + y})
		}
		if d > 0 {
			if x == prevX {
				y--
				rev = append(rev, diffOp{opInsert, off + x, off + y})
			} else {
				x--
				rev = append(rev, diffOp{opDelete, off + x, off + y})
			}
		}
		x, y = prevX, prevY
	}
	ops := make([]diffOp, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

func replaceBlock(n, m, off int) []diffOp {
	ops := make([]diffOp, 0, n+m)
	for i := 0; i < n; i++ {
		ops = append(ops, diffOp{opDelete, off + i, off})
	}
	for j := 0; j < m; j++ {
		ops = append(ops, diffOp{opInsert, off + n, off + j})
	}
	return ops
}

// fileDiff is the unified diff of a file's change and the 1-based lines of
// the new text that changed (for a pure deletion, the line where it was).
type fileDiff struct {
	text    string
	changed []int
}

// unifiedDiff diffs oldText against newText; name labels both sides
// ("a/name", "b/name"), and created makes the old side /dev/null. It
// returns an empty text when nothing changed.
func unifiedDiff(name, oldText, newText string, created bool) fileDiff {
	a, b := splitLines(oldText), splitLines(newText)
	ops := diffLines(a, b)
	var fd fileDiff
	seen := map[int]bool{}
	for _, op := range ops {
		line := -1
		switch op.kind {
		case opInsert:
			line = op.b + 1
		case opDelete:
			line = min(op.b+1, len(b)) // the line now where the deleted one was (0: the file is empty)
		}
		if line > 0 && !seen[line] && len(fd.changed) < maxChangedLines {
			seen[line] = true
			fd.changed = append(fd.changed, line)
		}
	}
	var sb strings.Builder
	for start := 0; start < len(ops); {
		// Find the next change and the hunk around it.
		for start < len(ops) && ops[start].kind == opEqual {
			start++
		}
		if start == len(ops) {
			break
		}
		lo := max(start-diffContext, 0)
		hi := start
		for {
			for hi < len(ops) && ops[hi].kind != opEqual {
				hi++
			}
			run := hi
			for run < len(ops) && ops[run].kind == opEqual {
				run++
			}
			if run < len(ops) && run-hi <= 2*diffContext {
				hi = run // the next change is close: same hunk
				continue
			}
			hi = min(hi+diffContext, len(ops))
			break
		}
		if sb.Len() == 0 {
			from := "a/" + name
			if created {
				from = "/dev/null"
			}
			fmt.Fprintf(&sb, "--- %s\n+++ b/%s\n", from, name)
		}
		writeHunk(&sb, ops[lo:hi], a, b)
		start = hi
	}
	fd.text = sb.String()
	return fd
}

func writeHunk(sb *strings.Builder, ops []diffOp, a, b []string) {
	aStart, bStart := ops[0].a, ops[0].b
	aCount, bCount := 0, 0
	for _, op := range ops {
		switch op.kind {
		case opEqual:
			aCount++
			bCount++
		case opDelete:
			aCount++
		case opInsert:
			bCount++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(aStart, aCount), hunkRange(bStart, bCount))
	for _, op := range ops {
		line := ""
		switch op.kind {
		case opEqual, opDelete:
			line = a[op.a]
		case opInsert:
			line = b[op.b]
		}
		sb.WriteByte(byte(op.kind))
		sb.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a hunk side as diff -u does: an empty range names the
// line before it.
func hunkRange(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if count == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}
