package tools

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	cases := []struct {
		name, a, b string
		created    bool
		want       string
	}{
		{"same", "x\n", "x\n", false, ""},
		{"create", "", "a\nb\n", true, "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to-empty", "a\n", "", false, "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n"},
		{"no-newline", "a", "a\n", false, "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
		{"insert-middle", "1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nnew\n5\n6\n7\n8\n", false,
			"--- a/f\n+++ b/f\n@@ -2,6 +2,7 @@\n 2\n 3\n 4\n+new\n 5\n 6\n 7\n"},
		// Changes 10 lines apart get separate hunks; 6 apart share one.
		{"two-hunks", lines(1, 20), strings.Replace(strings.Replace(lines(1, 20), "3\n", "three\n", 1), "15\n", "fifteen\n", 1), false,
			"--- a/f\n+++ b/f\n@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+three\n 4\n 5\n 6\n@@ -12,7 +12,7 @@\n 12\n 13\n 14\n-15\n+fifteen\n 16\n 17\n 18\n"},
		{"one-hunk", lines(1, 20), strings.Replace(strings.Replace(lines(1, 20), "3\n", "three\n", 1), "10\n", "ten\n", 1), false,
			"--- a/f\n+++ b/f\n@@ -1,13 +1,13 @@\n 1\n 2\n-3\n+three\n 4\n 5\n 6\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n"},
	}
	for _, c := range cases {
		if got := unifiedDiff("f", c.a, c.b, c.created).text; got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// The edit script must turn a into b exactly, and be minimal for small
// random inputs (checked against an LCS table).
func TestDiffLinesRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 500; iter++ {
		a, b := randLines(rng), randLines(rng)
		ops := diffLines(a, b)
		var rebuilt []string
		edits, ai, bi := 0, 0, 0
		for _, op := range ops {
			switch op.kind {
			case opEqual:
				if a[op.a] != b[op.b] || op.a != ai || op.b != bi {
					t.Fatalf("bad equal op %+v", op)
				}
				rebuilt = append(rebuilt, a[op.a])
				ai++
				bi++
			case opDelete:
				if op.a != ai {
					t.Fatalf("delete out of order %+v", op)
				}
				ai++
				edits++
			case opInsert:
				if op.b != bi {
					t.Fatalf("insert out of order %+v", op)
				}
				rebuilt = append(rebuilt, b[op.b])
				bi++
				edits++
			}
		}
		if ai != len(a) || bi != len(b) || strings.Join(rebuilt, "") != strings.Join(b, "") {
			t.Fatalf("script does not rebuild b: a=%q b=%q", a, b)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("not minimal: %d edits, want %d (a=%q b=%q)", edits, want, a, b)
		}
	}
}

func randLines(rng *rand.Rand) []string {
	n := rng.Intn(12)
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+rng.Intn(4))) + "\n"
	}
	return out
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// Past maxDiffEdits the middle becomes one replaced block, still correct.
func TestDiffFallback(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	d := unifiedDiff("f", a.String(), b.String(), false)
	if !strings.HasPrefix(d.text, "--- a/f\n+++ b/f\n@@ -1,3000 +1,3000 @@\n-a0\n") || strings.Count(d.text, "\n+b") != 3000 {
		t.Fatalf("fallback diff: %q", d.text[:80])
	}
}

func BenchmarkDiffSmallEditInLargeFile(b *testing.B) {
	old := lines(1, 20000)
	new := strings.Replace(old, "10000\n", "ten thousand\n", 1)
	for i := 0; i < b.N; i++ {
		unifiedDiff("f", old, new, false)
	}
}
