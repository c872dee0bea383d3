package summary

import (
	"bytes"
	"testing"
)

// FuzzSummaryIndexFile: any bytes as an index file never crash a reader,
// and every record it accepts is exactly the line a writer would write
// for it, so a damaged line is never taken for another claim.
func FuzzSummaryIndexFile(f *testing.F) {
	valid := []byte(FileHeader)
	valid = AppendLine(valid, "01a23163-27df-7997-8a87-ec43f87ea10b", Claim{State: Exact, Flags: InUnarchived, UpdatedAt: 1795971600003})
	valid = AppendLine(valid, "01a23163-27df-7997-8a87-ec43f87ea10c", Claim{State: Loose, Flags: 3, UpdatedAt: 1})
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add([]byte(FileHeader + "e1 x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var lines [][]byte
		rest := data
		if bytes.HasPrefix(rest, []byte(FileHeader)) {
			rest = rest[len(FileHeader):]
		}
		_, _, ok := Scan(data, func(id []byte, c Claim) {
			lines = append(lines, AppendLine(nil, string(id), c))
		})
		if !ok {
			return
		}
		for _, l := range lines {
			if !bytes.HasPrefix(rest, l) {
				t.Fatalf("accepted a record that is not its own encoding: %q", l)
			}
			rest = rest[len(l):]
		}
		if bytes.IndexByte(rest, '\n') >= 0 {
			t.Fatalf("left out a whole line: %q", rest)
		}
	})
}
