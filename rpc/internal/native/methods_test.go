package native

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func protocolDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// TestErrorCodesAreTheDocumentedTable: ErrorCodes is docs/protocol.md's
// table of every data.code, row by row, with the same integers, so a
// generated schema lists exactly the codes the reference promises.
func TestErrorCodesAreTheDocumentedTable(t *testing.T) {
	doc := protocolDoc(t)
	start := strings.Index(doc, "Every `data.code`:")
	end := strings.Index(doc, "\n## 4. Data types")
	if start < 0 || end < start {
		t.Fatal("docs/protocol.md has no table of every data.code before section 4")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (-[0-9]+) \\|")
	var documented []ErrorCode
	for _, m := range row.FindAllStringSubmatch(doc[start:end], -1) {
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		documented = append(documented, ErrorCode{m[1], n})
	}
	got := ErrorCodes()
	if len(documented) < 20 || len(got) != len(documented) {
		t.Fatalf("ErrorCodes has %d codes, docs/protocol.md's table %d:\n%v\n%v", len(got), len(documented), got, documented)
	}
	for i := range got {
		if got[i] != documented[i] {
			t.Errorf("row %d: ErrorCodes says %v, docs/protocol.md %v", i, got[i], documented[i])
		}
	}
}

// TestEngineCodesAreAllListed: every code engine/errors.go declares is in
// ErrorCodes, so a code added to the engine reaches the table.
func TestEngineCodesAreAllListed(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "engine", "errors.go"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, c := range ErrorCodes() {
		listed[c.Code] = true
	}
	decl := regexp.MustCompile(`(?m)^\s+Code[A-Za-z]+\s+Code = "([a-z_]+)"`)
	found := decl.FindAllStringSubmatch(string(src), -1)
	if len(found) < 20 {
		t.Fatalf("found only %d codes in engine/errors.go: the scan is broken", len(found))
	}
	for _, m := range found {
		if !listed[m[1]] {
			t.Errorf("engine code %q is not in ErrorCodes", m[1])
		}
	}
}

// TestEveryMethodAndNotificationIsDocumented: each name of the table is
// one docs/protocol.md documents.
func TestEveryMethodAndNotificationIsDocumented(t *testing.T) {
	doc := protocolDoc(t)
	var names []string
	for _, m := range append(Methods(), ServerRequests()...) {
		names = append(names, m.Name)
		if m.Params == nil || m.Result == nil {
			t.Errorf("%s has no params or result type", m.Name)
		}
	}
	for _, n := range append(Notifications(), ClientNotifications()...) {
		names = append(names, n.Name)
	}
	for _, name := range names {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("%s is not named in docs/protocol.md", name)
		}
	}
}
